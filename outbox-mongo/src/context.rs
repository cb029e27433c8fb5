//! The session context: the user's transaction plus the events staged in
//! it.

use mongodb::ClientSession;
use mongodb::error::{Error as MongoError, ErrorKind};
use tidings_core::{OutboxBuffer, StagedEvent, StoreError};
use tracing::instrument;

use crate::MongoOutboxStore;
use crate::document::staged_document;
use crate::error::{CommitError, is_duplicate_key, store_error};

/// A transaction with an outbox: the user's operations (run with
/// [`session`](Self::session)) and the staged events commit together, or
/// not at all.
///
/// Opened by [`MongoOutboxStore::begin`], [`MongoOutboxStore::begin_on`] or
/// [`MongoOutboxStore::context`]. Dropping it, or calling
/// [`rollback`](Self::rollback), aborts the transaction and discards the
/// staged events.
#[derive(Debug)]
pub struct MongoContext {
    session: ClientSession,
    outbox: OutboxBuffer,
    store: MongoOutboxStore,
}

impl MongoContext {
    pub(crate) fn new(
        session: ClientSession,
        outbox: OutboxBuffer,
        store: MongoOutboxStore,
    ) -> Self {
        Self {
            session,
            outbox,
            store,
        }
    }

    /// The session in its transaction, for the caller's own operations:
    /// `collection.insert_one(doc).session(ctx.session()).await`.
    pub fn session(&mut self) -> &mut ClientSession {
        &mut self.session
    }

    /// The staging buffer: `ctx.outbox().stage(&SPEC, "order.placed", &payload)`.
    pub fn outbox(&mut self) -> &mut OutboxBuffer {
        &mut self.outbox
    }

    /// The store the context belongs to.
    pub fn store(&self) -> &MongoOutboxStore {
        &self.store
    }

    /// Inserts the events staged so far into the transaction with one
    /// `insert_many`, without committing. Returns how many were inserted.
    #[instrument(skip_all, fields(db.system = "mongodb", events = self.outbox.len()), err)]
    pub async fn flush(&mut self) -> Result<u64, CommitError> {
        let events = self.outbox.take()?;
        if events.is_empty() {
            return Ok(0);
        }
        let now = self.store.now();
        let documents: Vec<_> = events
            .iter()
            .map(|e| staged_document(e, self.store.next_seq(), now))
            .collect();
        let inserted = self
            .store
            .outbox()
            .insert_many(documents)
            .session(&mut self.session)
            .await
            .map_err(|e| insert_error(e, &events))?;
        Ok(inserted.inserted_ids.len() as u64)
    }

    /// Inserts the staged events and commits the transaction.
    #[instrument(skip_all, fields(db.system = "mongodb"), err)]
    pub async fn commit(mut self) -> Result<(), CommitError> {
        self.flush().await?;
        self.session.commit_transaction().await?;
        Ok(())
    }

    /// Aborts the transaction and discards the staged events.
    #[instrument(skip_all, fields(db.system = "mongodb"), err)]
    pub async fn rollback(mut self) -> Result<(), StoreError> {
        self.session.abort_transaction().await.map_err(store_error)
    }

    /// Inserts the staged events and hands the session back, its
    /// transaction still open, for callers that commit it themselves.
    pub async fn into_session(mut self) -> Result<ClientSession, CommitError> {
        self.flush().await?;
        Ok(self.session)
    }
}

/// A refused `insert_many`: a duplicate event names the event, anything
/// else is the driver's error.
fn insert_error(error: MongoError, events: &[StagedEvent]) -> CommitError {
    if is_duplicate_key(&error) {
        let index = match &*error.kind {
            ErrorKind::InsertMany(e) => e
                .write_errors
                .as_ref()
                .and_then(|w| w.first().map(|w| w.index)),
            _ => None,
        };
        if let Some(event) = events.get(index.unwrap_or(0)) {
            return CommitError::DuplicateEvent {
                route: event.envelope.route.clone(),
                event_id: event.envelope.event_id,
            };
        }
    }
    CommitError::Store(store_error(error))
}
