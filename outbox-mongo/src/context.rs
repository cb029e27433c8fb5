//! The session context: the user's transaction plus the events staged in
//! it.

use std::collections::{BTreeMap, HashSet};

use futures::TryStreamExt;
use mongodb::ClientSession;
use mongodb::bson::Document;
use mongodb::error::Error as MongoError;
use tidings_core::{CausalContext, Cause, OutboxBuffer, StagedEvent, StoreError};
use tracing::instrument;
use uuid::Uuid;

use crate::MongoOutboxStore;
use crate::document::{event_id, staged_document};
use crate::error::{CommitError, is_duplicate_key, store_error};
use crate::filters;
use crate::schema::{field, micros};

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
    /// Routes this transaction recorded, known to the store once it
    /// commits.
    recorded: Vec<String>,
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
            recorded: Vec::new(),
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
    /// `insert_many`, without committing. Returns how many were inserted:
    /// an event id already stored for its route is skipped, so staging with
    /// an explicit id is idempotent. Only a chosen id can be stored
    /// already, so the read that looks for them is made only when one was
    /// chosen; freshly generated ids go straight to the insert.
    ///
    /// # Errors
    ///
    /// [`CommitError::Stage`] when a staged event's ordering key or headers are
    /// invalid or two staged events share an id; [`CommitError::Store`] when the
    /// insert fails: [`StoreError::Conflict`] when a concurrent transaction
    /// wrote the same documents or stored one of the events first,
    /// [`StoreError::Unavailable`] when the database cannot be reached,
    /// [`StoreError::Backend`] for any other database error. The transaction
    /// stays open; abort it.
    #[instrument(skip_all, fields(db.system = "mongodb", events = self.outbox.len()), err)]
    pub async fn flush(&mut self) -> Result<u64, CommitError> {
        let ids_chosen = self.outbox.ids_chosen();
        let events = self.outbox.take()?;
        if events.is_empty() {
            return Ok(0);
        }
        self.record_routes(&events).await?;
        let stored = match ids_chosen {
            true => self.already_stored(&events).await?,
            false => HashSet::new(),
        };
        let now = self.store.now();
        let documents: Vec<_> = events
            .iter()
            .filter(|e| !stored.contains(&(e.envelope.route.clone(), e.envelope.event_id)))
            .map(|e| staged_document(e, self.store.next_seq(), now))
            .collect();
        if documents.is_empty() {
            return Ok(0);
        }
        let inserted = self
            .store
            .outbox()
            .insert_many(documents)
            .session(&mut self.session)
            .await
            .map_err(insert_error)?;
        Ok(inserted.inserted_ids.len() as u64)
    }

    /// Records the routes of `events` the store has not seen recorded, in
    /// the transaction: one upsert per route at its first staging in this
    /// process, none after.
    async fn record_routes(&mut self, events: &[StagedEvent]) -> Result<(), CommitError> {
        let unknown = self
            .store
            .known_routes()
            .unknown(events.iter().map(|e| e.envelope.route.as_str()));
        let now = micros(self.store.now());
        for route in unknown {
            let result = self
                .store
                .routes_collection()
                .update_one(filters::route_record(&route), filters::route_insert(now))
                .upsert(true)
                .session(&mut self.session)
                .await?;
            if result.upserted_id.is_some() {
                self.recorded.push(route);
            } else {
                self.store.known_routes().learn([route]);
            }
        }
        Ok(())
    }

    /// The `(route, event_id)` pairs of `events` stored already, as this
    /// transaction sees them.
    async fn already_stored(
        &mut self,
        events: &[StagedEvent],
    ) -> Result<HashSet<(String, Uuid)>, CommitError> {
        let mut by_route: BTreeMap<&str, Vec<Uuid>> = BTreeMap::new();
        for e in events {
            by_route
                .entry(&e.envelope.route)
                .or_default()
                .push(e.envelope.event_id);
        }
        let found: Vec<Document> = self
            .store
            .outbox()
            .find(filters::stored_events(&by_route))
            .projection(filters::route_and_event_id())
            .session(&mut self.session)
            .await?
            .stream(&mut self.session)
            .try_collect()
            .await?;
        Ok(found
            .iter()
            .filter_map(|d| Some((d.get_str(field::ROUTE).ok()?.to_owned(), event_id(d)?)))
            .collect())
    }

    /// Inserts the staged events and commits the transaction.
    ///
    /// # Errors
    ///
    /// The errors of [`flush`](Self::flush), and [`CommitError::Store`] when
    /// the commit fails ([`StoreError::Conflict`] on a write conflict,
    /// [`StoreError::Unavailable`] when the database cannot be reached,
    /// [`StoreError::Backend`] for any other database error). Nothing of the
    /// transaction is written either way.
    #[instrument(skip_all, fields(db.system = "mongodb"), err)]
    pub async fn commit(mut self) -> Result<(), CommitError> {
        self.flush().await?;
        self.session.commit_transaction().await?;
        let recorded = std::mem::take(&mut self.recorded);
        self.store.known_routes().learn(recorded);
        Ok(())
    }

    /// Aborts the transaction and discards the staged events.
    ///
    /// # Errors
    ///
    /// [`StoreError::Unavailable`] when the database cannot be reached (the
    /// server then aborts the transaction itself when it times out);
    /// [`StoreError::Backend`] for any other database error.
    #[instrument(skip_all, fields(db.system = "mongodb"), err)]
    pub async fn rollback(mut self) -> Result<(), StoreError> {
        self.session.abort_transaction().await.map_err(store_error)
    }

    /// Inserts the staged events and hands the session back, its
    /// transaction still open, for callers that commit it themselves.
    ///
    /// # Errors
    ///
    /// The errors of [`flush`](Self::flush).
    pub async fn into_session(mut self) -> Result<ClientSession, CommitError> {
        self.flush().await?;
        Ok(self.session)
    }
}

/// Hands the cause to the context's outbox, so a consumer's handler stages
/// events caused by the message it handles.
impl CausalContext for MongoContext {
    fn set_cause(&mut self, cause: Option<Cause>) {
        self.outbox.set_cause(cause);
    }

    fn cause(&self) -> Option<&Cause> {
        self.outbox.cause()
    }
}

/// A refused `insert_many`. A duplicate key means a concurrent transaction
/// stored one of the events after this one looked: a conflict, which
/// running the transaction again resolves by skipping the event.
fn insert_error(error: MongoError) -> CommitError {
    if is_duplicate_key(&error) {
        return CommitError::Store(StoreError::Conflict(error.into()));
    }
    CommitError::Store(store_error(error))
}
