//! The in-memory inbox and its attempt counts.

use std::time::Duration;

use uuid::Uuid;

use super::context::MemoryContext;
use super::store::{AttemptCount, MemoryStore};
use crate::{
    Attempts, CommitFailure, ConsumerName, InboxAttempts, InboxError, InboxKey, InboxMark,
    InboxPurge, InboxStore, IsolationLevel,
};

impl InboxStore for MemoryStore {
    type Tx = MemoryContext;

    async fn begin(&self) -> Result<MemoryContext, InboxError> {
        Ok(MemoryStore::begin(self))
    }

    /// Reads see what was committed when they run, so read committed.
    async fn begin_at(&self, level: IsolationLevel) -> Result<MemoryContext, InboxError> {
        match self.offers_isolation(level) {
            true => Ok(MemoryStore::begin(self)),
            false => Err(InboxError::not_offered(level)),
        }
    }

    fn offers_isolation(&self, level: IsolationLevel) -> bool {
        level == IsolationLevel::ReadCommitted
    }

    async fn mark(
        &self,
        tx: &mut MemoryContext,
        key: InboxKey<'_>,
    ) -> Result<InboxMark, InboxError> {
        let key = owned(key);
        if tx.marks.contains(&key) || self.lock().inbox.contains_key(&key) {
            return Ok(InboxMark::Duplicate);
        }
        tx.marks.push(key);
        Ok(InboxMark::Fresh(()))
    }

    async fn commit(&self, tx: MemoryContext) -> Result<(), InboxError> {
        tx.commit().map_err(CommitFailure::into_inbox_error)
    }

    async fn rollback(&self, tx: MemoryContext) -> Result<(), InboxError> {
        tx.rollback();
        Ok(())
    }
}

impl InboxAttempts for MemoryStore {
    async fn start_attempt(&self, key: InboxKey<'_>) -> Result<Option<Attempts>, InboxError> {
        Ok(Some(self.count_attempt(key, 1, 0)))
    }

    async fn attempts(&self, key: InboxKey<'_>) -> Result<Option<Attempts>, InboxError> {
        let count = self.lock().attempts.get(&owned(key)).map(|c| c.attempts);
        Ok(Some(count.unwrap_or_default()))
    }

    async fn finish_attempt(
        &self,
        key: InboxKey<'_>,
        start_counted: bool,
    ) -> Result<(), InboxError> {
        self.count_attempt(key, u32::from(!start_counted), 1);
        Ok(())
    }

    async fn clear_attempts(
        &self,
        tx: &mut MemoryContext,
        key: InboxKey<'_>,
    ) -> Result<(), InboxError> {
        tx.cleared.push(owned(key));
        Ok(())
    }
}

impl InboxPurge for MemoryStore {
    async fn purge_older_than(
        &self,
        consumer: &ConsumerName,
        age: Duration,
        limit: usize,
    ) -> Result<u64, InboxError> {
        let Some(cutoff) = self.now().checked_sub(age) else {
            return Ok(0);
        };
        let consumer = consumer.as_str();
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

/// The map key the store files a mark or a count under.
fn owned(key: InboxKey<'_>) -> (String, Uuid) {
    (key.consumer().to_owned(), key.event_id())
}

impl MemoryStore {
    /// Adds to the attempts counted for an event; returns the new counts.
    fn count_attempt(&self, key: InboxKey<'_>, started: u32, finished: u32) -> Attempts {
        let now = self.now();
        let mut state = self.lock();
        let count = state.attempts.entry(owned(key)).or_insert(AttemptCount {
            attempts: Attempts::default(),
            touched: now,
        });
        count.attempts.started = count.attempts.started.saturating_add(started);
        count.attempts.finished = count.attempts.finished.saturating_add(finished);
        count.touched = now;
        count.attempts
    }
}
