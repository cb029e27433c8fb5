//! The in-memory inbox and its attempt counts.

use std::time::Duration;

use uuid::Uuid;

use super::context::{CommitError, MemoryContext};
use super::store::{AttemptCount, MemoryStore};
use crate::{Attempts, InboxError, InboxMark, InboxStore};

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
        InboxError::check_consumer(consumer)?;
        let key = (consumer.to_owned(), event_id);
        if tx.marks.contains(&key) || self.lock().inbox.contains_key(&key) {
            return Ok(InboxMark::Duplicate);
        }
        tx.marks.push(key);
        Ok(InboxMark::Fresh(()))
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

    async fn start_attempt(
        &self,
        consumer: &str,
        event_id: Uuid,
    ) -> Result<Option<Attempts>, InboxError> {
        InboxError::check_consumer(consumer)?;
        Ok(Some(self.count_attempt(consumer, event_id, 1, 0)))
    }

    async fn attempts(
        &self,
        consumer: &str,
        event_id: Uuid,
    ) -> Result<Option<Attempts>, InboxError> {
        InboxError::check_consumer(consumer)?;
        let state = self.lock();
        let count = state.attempts.get(&(consumer.to_owned(), event_id));
        Ok(Some(count.map(|c| c.attempts).unwrap_or_default()))
    }

    async fn finish_attempt(
        &self,
        consumer: &str,
        event_id: Uuid,
        start_counted: bool,
    ) -> Result<(), InboxError> {
        InboxError::check_consumer(consumer)?;
        self.count_attempt(consumer, event_id, u32::from(!start_counted), 1);
        Ok(())
    }

    async fn clear_attempts(
        &self,
        tx: &mut MemoryContext,
        consumer: &str,
        event_id: Uuid,
    ) -> Result<(), InboxError> {
        InboxError::check_consumer(consumer)?;
        tx.cleared.push((consumer.to_owned(), event_id));
        Ok(())
    }

    async fn purge_older_than(
        &self,
        consumer: &str,
        age: Duration,
        limit: usize,
    ) -> Result<u64, InboxError> {
        InboxError::check_consumer(consumer)?;
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
        let stale: Vec<_> = state
            .attempts
            .iter()
            .filter(|((c, _), count)| c == consumer && count.touched <= cutoff)
            .map(|(k, _)| k.clone())
            .take(limit)
            .collect();
        for key in &stale {
            state.attempts.remove(key);
        }
        Ok((doomed.len() + stale.len()) as u64)
    }
}

impl MemoryStore {
    /// Adds to the attempts counted for an event; returns the new counts.
    fn count_attempt(
        &self,
        consumer: &str,
        event_id: Uuid,
        started: u32,
        finished: u32,
    ) -> Attempts {
        let now = self.now();
        let mut state = self.lock();
        let count = state
            .attempts
            .entry((consumer.to_owned(), event_id))
            .or_insert(AttemptCount {
                attempts: Attempts::default(),
                touched: now,
            });
        count.attempts.started = count.attempts.started.saturating_add(started);
        count.attempts.finished = count.attempts.finished.saturating_add(finished);
        count.touched = now;
        count.attempts
    }
}
