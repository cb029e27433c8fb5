//! The in-memory unit of work.

use std::collections::HashSet;

use bytes::Bytes;
use uuid::Uuid;

use super::rows::{Row, Status};
use super::store::MemoryStore;
use crate::{
    CausalContext, Cause, CommitFailure, OutboxBuffer, StageError, StagedEvent, StoreError,
};

/// A commit that was refused. Nothing of the unit of work was applied.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CommitError {
    /// A staged event is invalid.
    #[error(transparent)]
    Stage(#[from] StageError),
    /// Another unit of work committed the same inbox mark first.
    #[error("inbox mark ({consumer}, {event_id}) was committed concurrently")]
    InboxConflict {
        /// The consumer.
        consumer: String,
        /// The event id.
        event_id: Uuid,
    },
}

/// A mark committed concurrently is the store's conflict; an invalid
/// staged event is the transaction's own.
impl CommitFailure for CommitError {
    fn into_store(self) -> Result<StoreError, Self> {
        match self {
            Self::InboxConflict { .. } => Ok(StoreError::Conflict(self.into())),
            other => Err(other),
        }
    }
}

/// A unit of work on a [`MemoryStore`]: staged events, inbox marks,
/// cleared attempt counts and table writes, applied together by [`commit`](Self::commit). Dropping it
/// discards everything. An event whose id is already stored for its route
/// is skipped, so staging with an explicit id is idempotent.
#[derive(Debug)]
pub struct MemoryContext {
    store: MemoryStore,
    outbox: OutboxBuffer,
    pub(super) marks: Vec<(String, Uuid)>,
    /// Attempt counts deleted when the unit of work commits.
    pub(super) cleared: Vec<(String, Uuid)>,
    writes: Vec<(String, String, Bytes)>,
}

impl MemoryStore {
    /// Opens a unit of work: staged events, inbox marks and table writes
    /// become visible together on [`MemoryContext::commit`], or not at all.
    pub fn begin(&self) -> MemoryContext {
        MemoryContext::new(self.clone())
    }
}

impl MemoryContext {
    pub(super) fn new(store: MemoryStore) -> Self {
        let outbox = OutboxBuffer::new(store.inner.clock.clone(), store.inner.hlc.clone());
        Self {
            store,
            outbox,
            marks: Vec::new(),
            cleared: Vec::new(),
            writes: Vec::new(),
        }
    }

    /// The outbox of this unit of work: `ctx.outbox().stage(&SPEC, type, &payload)`.
    pub fn outbox(&mut self) -> &mut OutboxBuffer {
        &mut self.outbox
    }

    /// Writes a business row, visible once the unit of work commits.
    pub fn insert(&mut self, table: &str, key: impl Into<String>, value: impl Into<Bytes>) {
        self.writes
            .push((table.to_owned(), key.into(), value.into()));
    }

    /// Reads a row: this unit of work's own writes first, then committed ones.
    pub fn get(&self, table: &str, key: &str) -> Option<Bytes> {
        let own = self
            .writes
            .iter()
            .rev()
            .find(|(t, k, _)| t == table && k == key);
        match own {
            Some((_, _, value)) => Some(value.clone()),
            None => self.store.get(table, key),
        }
    }

    /// The store this unit of work belongs to.
    pub fn store(&self) -> &MemoryStore {
        &self.store
    }

    /// Applies everything atomically, or nothing with the reason.
    ///
    /// # Errors
    ///
    /// [`CommitError::Stage`] when a staged event's options are invalid or two
    /// staged events share an id; [`CommitError::InboxConflict`] when another
    /// unit of work committed one of this context's inbox marks first. Nothing
    /// is applied either way.
    ///
    /// The context is consumed, so staging after commit does not compile:
    ///
    /// ```compile_fail
    /// # use tidings_core::{memory::MemoryStore, OutboxSpec};
    /// # static EVENTS: OutboxSpec<u32> = OutboxSpec::json("e").destination("q");
    /// let mut ctx = MemoryStore::new().begin();
    /// ctx.commit().unwrap();
    /// ctx.outbox().stage(&EVENTS, "late", &1);
    /// ```
    pub fn commit(mut self) -> Result<(), CommitError> {
        let staged = self.outbox.take()?;
        let now = self.store.now();
        let mut state = self.store.lock();
        check_conflicts(&state, &self.marks)?;
        for (consumer, id) in self.marks.drain(..) {
            state.inbox.insert((consumer, id), now);
        }
        for key in self.cleared.drain(..) {
            state.attempts.remove(&key);
        }
        for (table, key, value) in self.writes.drain(..) {
            state.tables.entry(table).or_default().insert(key, value);
        }
        let woke = !staged.is_empty();
        for StagedEvent { envelope, delay } in staged {
            let rows = state.routes.entry(envelope.route.clone()).or_default();
            if rows.by_id.contains_key(&envelope.event_id) {
                // Staging an id already stored for its route is a no-op.
                continue;
            }
            let seq = state.next_seq;
            state.next_seq += 1;
            let row = Row {
                available_at: delay.map_or(now, |delay| delay.available_at(now)),
                envelope,
                status: Status::Pending,
                started: 0,
                finished: 0,
                last_error: None,
                finished_at: None,
            };
            state
                .routes
                .entry(row.envelope.route.clone())
                .or_default()
                .insert(seq, row);
        }
        drop(state);
        if woke {
            self.store.inner.wakeup.wake();
        }
        Ok(())
    }

    /// Discards everything; the same as dropping the context.
    pub fn rollback(self) {}
}

/// Hands the cause to the unit of work's outbox.
impl CausalContext for MemoryContext {
    fn set_cause(&mut self, cause: Option<Cause>) {
        self.outbox.set_cause(cause);
    }

    fn cause(&self) -> Option<&Cause> {
        self.outbox.cause()
    }
}

fn check_conflicts(
    state: &super::store::State,
    marks: &[(String, Uuid)],
) -> Result<(), CommitError> {
    let mut seen = HashSet::new();
    for (consumer, id) in marks {
        if state.inbox.contains_key(&(consumer.clone(), *id)) || !seen.insert((consumer, id)) {
            return Err(CommitError::InboxConflict {
                consumer: consumer.clone(),
                event_id: *id,
            });
        }
    }
    Ok(())
}
