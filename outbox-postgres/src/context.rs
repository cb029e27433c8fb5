//! The transaction context: the user's transaction plus the events staged
//! in it.

use sqlx::types::time::OffsetDateTime;
use sqlx::{PgConnection, Postgres, Row, Transaction};
use tidings_core::staging::Delay;
use tidings_core::{CausalContext, Cause, Headers, Hlc, OutboxBuffer, StagedEvent, StoreError};
use tracing::instrument;
use uuid::Uuid;

use crate::PgOutboxStore;
use crate::error::{CommitError, store_error};
use crate::params::micros;
use crate::tailing;

/// A transaction with an outbox: the user's statements and the staged
/// events commit together, or not at all.
///
/// Opened by [`PgOutboxStore::begin`], [`PgOutboxStore::begin_on`] or
/// [`PgOutboxStore::context`]. Dropping it, or calling
/// [`rollback`](Self::rollback), discards both the statements and the staged
/// events.
#[derive(Debug)]
pub struct PgContext<'c> {
    tx: Transaction<'c, Postgres>,
    outbox: OutboxBuffer,
    store: PgOutboxStore,
    /// Whether [`commit`](Self::commit) wakes relays after committing
    /// instead of by a `NOTIFY` in the transaction: only where the commit
    /// is a real one, not a savepoint release.
    announce_after_commit: bool,
    /// Rows written that no `NOTIFY` in the transaction announces.
    unannounced: bool,
    /// Routes this transaction recorded in `<table>_routes`, known to the
    /// store once it commits.
    recorded: Vec<String>,
}

impl<'c> PgContext<'c> {
    pub(crate) fn new(
        tx: Transaction<'c, Postgres>,
        outbox: OutboxBuffer,
        store: PgOutboxStore,
    ) -> Self {
        Self {
            tx,
            outbox,
            store,
            announce_after_commit: false,
            unannounced: false,
            recorded: Vec::new(),
        }
    }

    /// Announces the commit after it, from outside the transaction.
    pub(crate) fn announce_after_commit(mut self) -> Self {
        self.announce_after_commit = true;
        self
    }

    /// The open transaction, to run the caller's own statements in.
    pub fn tx(&mut self) -> &mut PgConnection {
        &mut self.tx
    }

    /// The staging buffer: `ctx.outbox().stage(&SPEC, "order.placed", &payload)`.
    pub fn outbox(&mut self) -> &mut OutboxBuffer {
        &mut self.outbox
    }

    /// Writes the events staged so far into the transaction, in one
    /// statement that also queues the relays' wake-up hint (unless no
    /// listener exists), without committing. Returns how many rows were
    /// inserted (an event id already stored for its route is skipped); with
    /// [log tailing in message mode](crate::LogTailing::messages), how many
    /// messages were written, every event staged.
    ///
    /// # Errors
    ///
    /// [`CommitError::Stage`] when a staged event's ordering key or headers are
    /// invalid or two staged events share an id; [`CommitError::Store`] when the
    /// insert fails ([`StoreError::Unavailable`] when the database cannot be
    /// reached, [`StoreError::Schema`] when the outbox table is missing,
    /// [`StoreError::Conflict`] when a concurrent transaction conflicts,
    /// [`StoreError::Backend`] for any other database error). The transaction
    /// stays open; roll it back.
    #[instrument(skip_all, fields(db.system = "postgresql", events = self.outbox.len()), err)]
    pub async fn flush(&mut self) -> Result<u64, CommitError> {
        self.write(true).await
    }

    /// Writes the staged events; with `notify`, the statement also queues
    /// the wake-up hint, else the rows are left for [`commit`](Self::commit)
    /// to announce.
    async fn write(&mut self, notify: bool) -> Result<u64, CommitError> {
        let ids_chosen = self.outbox.ids_chosen();
        let mut events = self.outbox.take()?;
        if events.is_empty() {
            return Ok(0);
        }
        self.record_routes(&events).await?;
        if self.store.stages_messages() {
            // The relay reads the log: no row, and nobody to wake.
            return self.emit(events).await;
        }
        // Where nobody listens at all, there is nobody to notify.
        let notifying = notify && self.store.notify_in_transaction();
        let inserted = match events.pop() {
            Some(event) if events.is_empty() && !notifying => {
                self.write_one(event, ids_chosen).await?
            }
            last => {
                events.extend(last);
                self.write_all(Columns::new(events)?, notifying).await?
            }
        };
        self.unannounced |= !notify && inserted > 0;
        Ok(inserted)
    }

    /// Records the routes of `events` this store has not seen recorded, in
    /// the transaction: one statement at the first staging of a route in
    /// this process, none after.
    async fn record_routes(&mut self, events: &[StagedEvent]) -> Result<(), CommitError> {
        let inner = self.store.inner();
        let unknown = inner
            .routes
            .unknown(events.iter().map(|e| e.envelope.route.as_str()));
        if unknown.is_empty() {
            return Ok(());
        }
        let inserted: Vec<String> = sqlx::query_scalar(inner.sql.record_routes.clone())
            .persistent(self.store.persistent())
            .bind(&unknown)
            .fetch_all(&mut *self.tx)
            .await?;
        // Routes not inserted were there already, committed by another.
        let committed = unknown.into_iter().filter(|r| !inserted.contains(r));
        inner.routes.learn(committed);
        self.recorded.extend(inserted);
        Ok(())
    }

    /// Writes one event with scalar parameters, no wake-up hint; the
    /// duplicate check only where the caller chose the id.
    async fn write_one(
        &mut self,
        event: StagedEvent,
        ids_chosen: bool,
    ) -> Result<u64, CommitError> {
        let StagedEvent { envelope: e, delay } = event;
        let inner = self.store.inner();
        let statement = match ids_chosen {
            true => inner.sql.stage_one.clone(),
            false => inner.sql.stage_one_fresh.clone(),
        };
        let done = sqlx::query(statement)
            .persistent(self.store.persistent())
            .bind(e.event_id)
            .bind(e.route)
            .bind(e.destination)
            .bind(e.event_type)
            .bind(e.payload.as_ref())
            .bind(e.content_type)
            .bind(headers_json(&e.event_id, &e.headers)?)
            .bind(e.ordering_key)
            .bind(e.correlation_id)
            .bind(e.causation_id)
            .bind(e.tenant_id)
            .bind(OffsetDateTime::from(e.occurred_at))
            .bind(e.hlc.map(stored_hlc))
            .bind(delay_micros(delay))
            .bind(not_before(delay))
            .bind(e.expires_at.map(OffsetDateTime::from))
            .execute(&mut *self.tx)
            .await?;
        Ok(done.rows_affected())
    }

    /// Writes every event as a logical decoding message of the transaction,
    /// in one statement; no row.
    async fn emit(&mut self, events: Vec<StagedEvent>) -> Result<u64, CommitError> {
        let (tailing, sql) = self.store.tailing()?;
        let mut contents = Vec::with_capacity(events.len());
        for event in &events {
            let content = tailing::encode(event).map_err(|e| StoreError::Invalid(e.to_string()))?;
            contents.push(content);
        }
        let emitted: i64 = sqlx::query_scalar(sql.emit.clone())
            .persistent(self.store.persistent())
            .bind(&tailing.prefix)
            .bind(&contents)
            .fetch_one(&mut *self.tx)
            .await?;
        Ok(u64::try_from(emitted).unwrap_or(0))
    }

    /// Writes every event in one statement, queueing the hint with `notify`.
    async fn write_all(&mut self, columns: Columns, notify: bool) -> Result<u64, CommitError> {
        let inner = self.store.inner();
        let row = sqlx::query(inner.sql.stage.clone())
            .persistent(self.store.persistent())
            .bind(columns.event_id)
            .bind(columns.route)
            .bind(columns.destination)
            .bind(columns.event_type)
            .bind(columns.payload)
            .bind(columns.content_type)
            .bind(columns.headers)
            .bind(columns.ordering_key)
            .bind(columns.correlation_id)
            .bind(columns.causation_id)
            .bind(columns.tenant_id)
            .bind(columns.occurred_at)
            .bind(columns.hlc)
            .bind(columns.delay_us)
            .bind(columns.not_before)
            .bind(columns.expires_at)
            .bind(notify.then_some(inner.channel.as_str()))
            .fetch_one(&mut *self.tx)
            .await?;
        let inserted: i64 = row.try_get("inserted")?;
        Ok(u64::try_from(inserted).unwrap_or(0))
    }

    /// Writes the staged events and commits the transaction (or, on a
    /// connection already in a transaction, releases the savepoint).
    ///
    /// # Errors
    ///
    /// [`CommitError::Stage`] when a staged event's ordering key or headers are
    /// invalid or two staged events share an id; [`CommitError::Store`] when the
    /// insert or the commit fails ([`StoreError::Unavailable`] when the database
    /// cannot be reached, [`StoreError::Schema`] when the outbox table is
    /// missing, [`StoreError::Conflict`] when a concurrent transaction
    /// conflicts, [`StoreError::Backend`] for any other database error). Nothing
    /// of the transaction is written either way.
    #[instrument(skip_all, fields(db.system = "postgresql"), err)]
    pub async fn commit(mut self) -> Result<(), CommitError> {
        self.write(!self.announce_after_commit).await?;
        self.tx.commit().await?;
        // Only a transaction of its own commits for real; a savepoint's
        // routes are learnt when a later staging finds them recorded.
        if self.announce_after_commit {
            let recorded = std::mem::take(&mut self.recorded);
            self.store.inner().routes.learn(recorded);
        }
        if self.unannounced {
            self.store.announce();
        }
        Ok(())
    }

    /// Discards the transaction and the staged events.
    ///
    /// # Errors
    ///
    /// [`StoreError::Unavailable`] when the connection is lost (the server then
    /// discards the transaction itself); [`StoreError::Backend`] for any other
    /// database error.
    #[instrument(skip_all, fields(db.system = "postgresql"), err)]
    pub async fn rollback(self) -> Result<(), StoreError> {
        self.tx.rollback().await.map_err(store_error)
    }

    /// Writes the staged events and hands the still-open transaction back,
    /// for callers that commit it themselves.
    ///
    /// # Errors
    ///
    /// The errors of [`flush`](Self::flush).
    #[instrument(skip_all, fields(db.system = "postgresql"), err)]
    pub async fn into_transaction(mut self) -> Result<Transaction<'c, Postgres>, CommitError> {
        self.flush().await?;
        Ok(self.tx)
    }
}

/// Hands the cause to the context's outbox, so a consumer's handler stages
/// events caused by the message it handles.
impl CausalContext for PgContext<'_> {
    fn set_cause(&mut self, cause: Option<Cause>) {
        self.outbox.set_cause(cause);
    }

    fn cause(&self) -> Option<&Cause> {
        self.outbox.cause()
    }
}

/// The staged events, one array per column, for the single insert.
#[derive(Default)]
pub(crate) struct Columns {
    pub(crate) event_id: Vec<uuid::Uuid>,
    pub(crate) route: Vec<String>,
    pub(crate) destination: Vec<String>,
    pub(crate) event_type: Vec<String>,
    pub(crate) payload: Vec<Vec<u8>>,
    pub(crate) content_type: Vec<String>,
    pub(crate) headers: Vec<String>,
    pub(crate) ordering_key: Vec<Option<String>>,
    pub(crate) correlation_id: Vec<Option<String>>,
    pub(crate) causation_id: Vec<Option<String>>,
    pub(crate) tenant_id: Vec<Option<String>>,
    pub(crate) occurred_at: Vec<OffsetDateTime>,
    pub(crate) hlc: Vec<Option<i64>>,
    pub(crate) delay_us: Vec<i64>,
    pub(crate) not_before: Vec<Option<OffsetDateTime>>,
    pub(crate) expires_at: Vec<Option<OffsetDateTime>>,
}

impl Columns {
    pub(crate) fn new(events: Vec<StagedEvent>) -> Result<Self, StoreError> {
        let mut c = Columns::default();
        for StagedEvent { envelope: e, delay } in events {
            c.headers.push(headers_json(&e.event_id, &e.headers)?);
            c.event_id.push(e.event_id);
            c.route.push(e.route);
            c.destination.push(e.destination);
            c.event_type.push(e.event_type);
            c.payload.push(e.payload.to_vec());
            c.content_type.push(e.content_type);
            c.ordering_key.push(e.ordering_key);
            c.correlation_id.push(e.correlation_id);
            c.causation_id.push(e.causation_id);
            c.tenant_id.push(e.tenant_id);
            c.occurred_at.push(OffsetDateTime::from(e.occurred_at));
            c.hlc.push(e.hlc.map(stored_hlc));
            c.expires_at.push(e.expires_at.map(OffsetDateTime::from));
            c.delay_us.push(delay_micros(delay));
            c.not_before.push(not_before(delay));
        }
        Ok(c)
    }
}

/// The delay in microseconds after the commit; zero for none or a time.
fn delay_micros(delay: Option<Delay>) -> i64 {
    delay.map_or(0, |delay| micros(delay.duration()))
}

/// The time before which the row stays invisible, where the event has
/// one; the statement takes the later of it and the delay's end.
fn not_before(delay: Option<Delay>) -> Option<OffsetDateTime> {
    delay.and_then(Delay::until).map(OffsetDateTime::from)
}

/// The headers as the JSON text the `headers` column is cast from; `{}`
/// without an allocation for the common empty map.
fn headers_json(event_id: &Uuid, headers: &Headers) -> Result<String, StoreError> {
    if headers.is_empty() {
        return Ok(String::from("{}"));
    }
    serde_json::to_string(headers).map_err(|err| StoreError::Corrupt {
        event_id: *event_id,
        reason: format!("headers do not encode: {err}"),
    })
}

/// A hybrid-clock stamp as the signed bigint it is stored as: a packed
/// stamp stays below 2^63 until the year 6429, so the order is kept.
fn stored_hlc(hlc: Hlc) -> i64 {
    hlc.as_u64() as i64
}
