//! The PostgreSQL outbox store: a pool, validated table names and the
//! statements rendered with them.

use std::sync::Arc;
use std::time::Duration;

use sqlx::{Connection, PgConnection, PgPool, Postgres, Transaction};
use tidings_core::port::error_chain;
use tidings_core::staging::KnownRoutes;
use tidings_core::{HybridClock, OutboxBuffer, StoreError, Wakeup};
use tracing::{debug, instrument};

use crate::announce::{Announcer, HintConnection, LocalWakeups, SenderGuard};
use crate::audience::{Audience, Listeners};
use crate::claim::connections::{ClaimConnections, RecordConnection};
use crate::claim::keys::KeyCursors;
use crate::error::store_error;
use crate::listener::Source;
use crate::names::TableNames;
use crate::rotation::RotationClock;
use crate::sql::Statements;
use crate::tailing::Tailing;
use crate::tailing::statements::TailStatements;
use crate::{
    Layout, PgContext, PgInboxStore, PgOutboxOptions, PgWakeupSource, Pooling, Retention, pooling,
};

/// The outbox (and inbox) store on PostgreSQL.
///
/// Cheap to clone: clones share one pool and one set of statements. Build it
/// with [`new`](Self::new), which validates the table names, then run
/// [`migrate`](Self::migrate) (or, where an operator migrates,
/// [`verify`](Self::verify)) before use.
#[derive(Debug, Clone)]
pub struct PgOutboxStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) pool: PgPool,
    pub(crate) names: TableNames,
    pub(crate) sql: Statements,
    pub(crate) options: PgOutboxOptions,
    pub(crate) hlc: HybridClock,
    pub(crate) channel: String,
    announcer: Announcer,
    hints: HintConnection,
    /// Where locked claims run.
    pub(crate) claims: ClaimConnections,
    /// Where each per-key route's next claim starts its walk over keys.
    pub(crate) keys: KeyCursors,
    /// Where locked claims write their records.
    pub(crate) records: RecordConnection,
    /// Who listened on the channel when last looked.
    audience: Audience,
    /// Listeners of this process, woken at commit without a round trip.
    local: Arc<LocalWakeups>,
    /// Signs this store's hints, so its own listeners skip them.
    pub(crate) token: String,
    /// When this store next truncates a slot of a rotated outbox.
    pub(crate) rotation: RotationClock,
    /// Routes known to be recorded in `<table>_routes`.
    pub(crate) routes: KnownRoutes,
    /// The names and statements of log tailing, where the store tails.
    pub(crate) tailing: Option<(Tailing, TailStatements)>,
}

impl PgOutboxStore {
    /// A store on `pool` with `options`.
    ///
    /// # Errors
    ///
    /// [`StoreError::Invalid`] when a schema or table name is not a plain
    /// lower-case identifier of at most
    /// [`MAX_IDENTIFIER_LEN`](crate::MAX_IDENTIFIER_LEN) bytes, when a
    /// [rotated](Layout::Rotated) outbox would keep published rows or be
    /// [tailed](PgOutboxOptions::log_tailing), when a replication slot or
    /// publication name is not a plain lower-case name of at most 63
    /// bytes, or when locked claims behind a transaction pooler would take
    /// every connection of the pool.
    ///
    /// ```no_run
    /// use tidings_postgres::sqlx::postgres::PgPoolOptions;
    /// use tidings_postgres::{PgOutboxOptions, PgOutboxStore};
    ///
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let pool = PgPoolOptions::new().connect("postgres://postgres@127.0.0.1/shop").await?;
    /// let store = PgOutboxStore::new(pool, PgOutboxOptions::new().schema("shop"))?;
    /// store.migrate().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(pool: PgPool, options: PgOutboxOptions) -> Result<Self, StoreError> {
        pooling::check(&pool, &options)?;
        let names = TableNames::new(
            options.get_schema(),
            options.get_table(),
            options.get_inbox_table(),
        )?;
        if options.get_layout() == Layout::Rotated && options.get_retention() == Retention::Keep {
            return Err(StoreError::Invalid(
                "a rotated outbox deletes published rows: Retention::Keep would move every \
                 kept row at each rotation; keep published events elsewhere, or use Layout::Plain"
                    .to_owned(),
            ));
        }
        let tailing = match options.get_log_tailing() {
            Some(_) if options.get_layout() == Layout::Rotated => {
                return Err(StoreError::Invalid(
                    "log tailing reads one table: use Layout::Plain with it".to_owned(),
                ));
            }
            Some(tailing) => {
                let tailing = Tailing::new(tailing, &names.schema, &names.outbox)?;
                let sql = TailStatements::new(&names, &tailing);
                Some((tailing, sql))
            }
            None => None,
        };
        let mut sql = Statements::new(&names, options.get_layout());
        sql.claim = sql.claim.per_key_claims(options.get_per_key_claims());
        let hlc = HybridClock::new(options.get_clock().clone());
        let channel = names.channel();
        let claims = ClaimConnections::new(options.get_claim_connections());
        Ok(Self {
            inner: Arc::new(Inner {
                pool,
                names,
                sql,
                options,
                hlc,
                channel,
                announcer: Announcer::default(),
                hints: HintConnection::default(),
                claims,
                keys: KeyCursors::default(),
                records: RecordConnection::default(),
                audience: Audience::default(),
                local: Arc::default(),
                token: uuid::Uuid::new_v4().simple().to_string(),
                rotation: RotationClock::default(),
                routes: KnownRoutes::default(),
                tailing,
            }),
        })
    }

    /// Opens a transaction on a pooled connection, ready for staging. Its
    /// [`commit`](PgContext::commit) wakes relays right after committing,
    /// rather than by a `NOTIFY` inside the transaction, which would
    /// serialise it with every other staging commit.
    ///
    /// # Errors
    ///
    /// [`StoreError::Unavailable`] when the database cannot be reached;
    /// [`StoreError::Timeout`] when no pooled connection comes free in time;
    /// [`StoreError::Backend`] for any other database error.
    #[instrument(skip_all, fields(db.system = "postgresql"), err)]
    pub async fn begin(&self) -> Result<PgContext<'static>, StoreError> {
        let tx = self.inner.pool.begin().await.map_err(store_error)?;
        Ok(self.context(tx).announce_after_commit())
    }

    /// Opens a transaction on a connection the caller holds: a plain one,
    /// or one already in a transaction, where this opens a savepoint that
    /// [`PgContext::commit`] releases into the caller's transaction.
    ///
    /// # Errors
    ///
    /// [`StoreError::Unavailable`] when the connection is lost;
    /// [`StoreError::Backend`] for any other database error.
    #[instrument(skip_all, fields(db.system = "postgresql"), err)]
    pub async fn begin_on<'c>(
        &self,
        conn: &'c mut PgConnection,
    ) -> Result<PgContext<'c>, StoreError> {
        let tx = conn.begin().await.map_err(store_error)?;
        Ok(self.context(tx))
    }

    /// Wraps a transaction the caller opened; its statements so far commit
    /// with the staged events.
    pub fn context<'c>(&self, tx: Transaction<'c, Postgres>) -> PgContext<'c> {
        PgContext::new(tx, self.buffer(), self.clone())
    }

    /// The steps that relay this store's routes to `publisher`: a
    /// [wake-up source](Self::wakeup_source) waking them on commits, and a relay and
    /// a backlog monitor per route added with
    /// [`Relays::route`](tidings_core::relay::Relays::route). Add the whole
    /// to a plan with
    /// [`LifecyclePlan::steps`](tidings_core::lifecycle::LifecyclePlan::steps).
    ///
    /// ```no_run
    /// use tidings_core::OutboxSpec;
    /// use tidings_core::lifecycle::LifecyclePlan;
    /// use tidings_core::memory::MemoryBroker;
    /// use tidings_postgres::PgOutboxStore;
    ///
    /// static ORDER_EVENTS: OutboxSpec<u64> = OutboxSpec::json("order-events").destination("orders");
    ///
    /// # async fn run(store: PgOutboxStore) -> Result<(), Box<dyn std::error::Error>> {
    /// // Any transport's publisher; the in-memory broker stands in here.
    /// let publisher = MemoryBroker::new();
    /// let plan = LifecyclePlan::new().steps(store.relays(publisher).route(&ORDER_EVENTS)?);
    /// plan.run_until(async { tokio::signal::ctrl_c().await.ok(); }).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn relays<P: tidings_core::Publisher + Clone>(
        &self,
        publisher: P,
    ) -> tidings_core::relay::Relays<Self, P> {
        tidings_core::relay::Relays::woken_by(self.clone(), publisher, |wakeup| {
            self.wakeup_source(wakeup)
        })
    }

    /// A wake-up source: a listener waking `wakeup` whenever a transaction staging into this
    /// store's table commits. Commits through this store (or its clones)
    /// wake it directly, without waiting for their `NOTIFY`, as long as the
    /// listener exists; those from other processes arrive by `NOTIFY`.
    pub fn wakeup_source(&self, wakeup: Wakeup) -> PgWakeupSource {
        let registration = self.inner.local.register(wakeup.clone());
        let options = &self.inner.options;
        let source = match (options.get_listen_options(), options.get_pooling()) {
            (Some(direct), _) => Source::Direct(Box::new(direct.clone())),
            (None, Pooling::Direct) => Source::Pool(self.inner.pool.clone()),
            (None, Pooling::Transaction) => Source::Nowhere,
        };
        PgWakeupSource::from_source(source, self.inner.channel.clone(), wakeup)
            .skip_own_hints(self.inner.token.clone(), registration)
    }

    /// The inbox store on this store's inbox table; its transactions are
    /// [`PgContext`]s, so a handler can stage events too.
    pub fn inbox(&self) -> PgInboxStore {
        PgInboxStore::new(self.clone())
    }

    /// The connection pool.
    pub fn pool(&self) -> &PgPool {
        &self.inner.pool
    }

    /// The options the store was built with.
    pub fn options(&self) -> &PgOutboxOptions {
        &self.inner.options
    }

    /// The NOTIFY channel committed staging transactions signal:
    /// `schema.table`.
    pub fn channel(&self) -> &str {
        &self.inner.channel
    }

    pub(crate) fn inner(&self) -> &Inner {
        &self.inner
    }

    /// Wakes relays after a commit: this process's at once, the others'
    /// by a hint from a task of its own, coalescing the hints of commits
    /// that arrive while one is sent. No hint is sent while no listener
    /// outside this process is known to exist, nor ever with
    /// [`remote_hints`](PgOutboxOptions::remote_hints) off.
    pub(crate) fn announce(&self) {
        self.inner.local.wake_all();
        let unheard = self.inner.audience.known().is_some_and(|l| !l.elsewhere);
        if unheard || !self.inner.options.get_remote_hints() {
            return;
        }
        self.start_sender();
    }

    /// Whether a transaction that announces its own commit should
    /// `NOTIFY`: unless nobody at all is known to listen. While that is
    /// unknown it should, and the hint sender finds out.
    pub(crate) fn notify_in_transaction(&self) -> bool {
        match self.inner.audience.known() {
            Some(listeners) => listeners.anywhere,
            None => {
                self.start_sender();
                true
            }
        }
    }

    /// Starts the hint sender unless it runs already; it looks up who
    /// listens when the last look is stale, then hints if anyone elsewhere
    /// does.
    fn start_sender(&self) {
        if !self.inner.announcer.request() {
            return;
        }
        let store = self.clone();
        tokio::spawn(async move {
            let inner = store.inner();
            let guard = SenderGuard::new(&inner.announcer);
            loop {
                if store.listeners().await.elsewhere {
                    store.send_hint().await;
                }
                if !inner.announcer.sent() {
                    break;
                }
                // Commits keep coming: let more of them share the next hint.
                tokio::time::sleep(ANNOUNCE_SPACING).await;
            }
            guard.disarm();
        });
    }

    /// Who listens: as last seen, or looked up afresh when that is stale.
    /// A failed look-up assumes everybody does, and is tried again next time.
    async fn listeners(&self) -> Listeners {
        let inner = self.inner();
        if let Some(known) = inner.audience.known() {
            return known;
        }
        let own = inner.local.backends();
        match inner.hints.listeners(self, own).await {
            Ok(seen) => {
                debug!(channel = %inner.channel, anywhere = seen.anywhere, elsewhere = seen.elsewhere, "listeners looked up");
                inner.audience.record(seen);
                seen
            }
            Err(error) => {
                debug!(error = %error_chain(&error), "listeners not looked up; hinting anyway");
                Listeners::ASSUMED
            }
        }
    }

    async fn send_hint(&self) {
        let inner = self.inner();
        let sent = inner.hints.send(self).await;
        if let Err(error) = sent {
            debug!(error = %error_chain(&error), "wake-up hint not sent; relays poll");
        }
    }

    pub(crate) fn delete_on_publish(&self) -> bool {
        self.inner.options.get_retention() == Retention::Delete
    }

    /// The hybrid logical clock stamping this store's events; give it to a
    /// consumer (`Consumer::hybrid_clock`) so reactions sort after their
    /// causes.
    pub fn hlc(&self) -> &HybridClock {
        &self.inner.hlc
    }

    fn buffer(&self) -> OutboxBuffer {
        OutboxBuffer::new(
            self.inner.options.get_clock().clone(),
            self.inner.hlc.clone(),
        )
    }
}

/// The least time between two wake-up hints of a store while commits keep
/// coming: the relay is busy then, and each hint costs a transaction.
const ANNOUNCE_SPACING: Duration = Duration::from_millis(1);
