//! The in-memory inbox.

use std::time::Duration;

use uuid::Uuid;

use super::context::{CommitError, MemoryContext};
use super::store::MemoryStore;
use crate::{InboxError, InboxMark, InboxStore};

impl InboxStore for MemoryStore {
    type Tx = MemoryContext;

    async fn begin(&self) -> Result<MemoryContext, InboxError> {
        Ok(MemoryStore::begin(self))
    }

    async fn mark(
        &self,
        tx: &mut MemoryContext,
        consumer: &str,
        event_id: Uuid,
    ) -> Result<InboxMark, InboxError> {
        let key = (consumer.to_owned(), event_id);
        if tx.marks.contains(&key) || self.lock().inbox.contains_key(&key) {
            return Ok(InboxMark::Duplicate);
        }
        tx.marks.push(key);
        Ok(InboxMark::Fresh)
    }

    async fn commit(&self, tx: MemoryContext) -> Result<(), InboxError> {
        tx.commit().map_err(|e| match e {
            CommitError::InboxConflict { .. } => InboxError::Conflict(e.into()),
            other => InboxError::Invalid(other.to_string()),
        })
    }

    async fn rollback(&self, tx: MemoryContext) -> Result<(), InboxError> {
        tx.rollback();
        Ok(())
    }

    async fn purge_older_than(
        &self,
        consumer: &str,
        age: Duration,
        limit: usize,
    ) -> Result<u64, InboxError> {
        let Some(cutoff) = self.now().checked_sub(age) else {
            return Ok(0);
        };
        let mut state = self.lock();
        let doomed: Vec<_> = state
            .inbox
            .iter()
            .filter(|((c, _), at)| c == consumer && **at <= cutoff)
            .map(|(k, _)| k.clone())
            .take(limit)
            .collect();
        for key in &doomed {
            state.inbox.remove(key);
        }
        Ok(doomed.len() as u64)
    }
}
