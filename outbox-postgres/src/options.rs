//! How a store is set up: table names, retention, claims and clock.

use sqlx::postgres::PgConnectOptions;
use tidings_core::{Retention, SharedClock, SystemClock, settings};

use crate::{Layout, LogTailing, Pooling};

/// How a relay's claim holds its rows until it settles them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClaimMode {
    /// The claim locks the rows in a transaction that stays open while the
    /// batch is published, and settling writes the outcomes and commits in
    /// that transaction (the default): one write per row instead of two
    /// (the claim's rewrite, with new index entries, and the settle); a
    /// relay that dies simply rolls back. A record per batch, committed on
    /// its own and deleted by the settle, lets a sweep count a claim that
    /// died as a crash, so crash loops are failed as with leases. Meant for
    /// publishes that take less than the lease: PostgreSQL ends a
    /// transaction left idle for longer and releases its rows. Each batch
    /// in flight holds a connection of the store's own, outside the pool
    /// (a pipelined drain at full speed holds up to four), or one of the pool's behind a
    /// transaction pooler, up to
    /// [`claim_connections`](PgOutboxOptions::claim_connections) at once.
    #[default]
    Locked,
    /// The claim commits at once, stamping the rows `in_flight` with a
    /// lease token and expiry. The publish may take any time and holds no
    /// connection; settling writes under the token, a sweep returns rows
    /// whose lease expired, and a row whose claims keep dying unsettled is
    /// failed as a crash loop. Each row is written twice.
    Leased,
}

/// Options of a [`PgOutboxStore`](crate::PgOutboxStore).
///
/// ```
/// use tidings_postgres::{PgOutboxOptions, Retention};
///
/// let options = PgOutboxOptions::new()
///     .schema("shop")
///     .table("order_outbox")
///     .retention(Retention::Keep);
/// assert_eq!(options.get_table(), "order_outbox");
/// ```
#[derive(Debug, Clone)]
pub struct PgOutboxOptions {
    schema: String,
    table: String,
    inbox_table: String,
    retention: Retention,
    layout: Layout,
    remote_hints: bool,
    claim_mode: ClaimMode,
    claim_connections: usize,
    per_key_claims: usize,
    pooling: Pooling,
    listen_options: Option<PgConnectOptions>,
    log_tailing: Option<LogTailing>,
    clock: SharedClock,
}

impl PgOutboxOptions {
    /// Default schema.
    pub const DEFAULT_SCHEMA: &'static str = "public";
    /// Default outbox table.
    pub const DEFAULT_TABLE: &'static str = "tidings_outbox";
    /// Default inbox table.
    pub const DEFAULT_INBOX_TABLE: &'static str = "tidings_inbox";
    /// Default [`claim_connections`](Self::claim_connections): room for
    /// one relay draining pipelined at full speed; relays beyond it share
    /// them, each claim waiting for a connection a settle frees.
    pub const DEFAULT_CLAIM_CONNECTIONS: usize = 4;
    /// Default [`per_key_claims`](Self::per_key_claims).
    pub const DEFAULT_PER_KEY_CLAIMS: usize = 1;

    /// The defaults: `public.tidings_outbox` and `public.tidings_inbox`,
    /// a plain table, published rows deleted, hints to other processes' relays, locked
    /// claims on up to four connections, a pool reaching the server
    /// directly, listeners on the pool, the system clock.
    ///
    /// ```
    /// use tidings_postgres::{PgOutboxOptions, Pooling};
    ///
    /// let options = PgOutboxOptions::new();
    /// assert_eq!(options.get_pooling(), Pooling::Direct);
    /// assert!(options.get_listen_options().is_none());
    /// let behind = options.pooling(Pooling::Transaction);
    /// assert_eq!(behind.get_pooling(), Pooling::Transaction);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }
}

settings!(PgOutboxOptions {
    /// The schema holding the tables; [`migrate`](crate::PgOutboxStore::migrate)
    /// creates it when missing. Several outbox tables may share a schema.
    /// The schemas PostgreSQL keeps for itself (`information_schema` and
    /// every name starting with `pg_`) are refused by
    /// [`PgOutboxStore::new`](crate::PgOutboxStore::new). Default
    /// [`DEFAULT_SCHEMA`](Self::DEFAULT_SCHEMA).
    schema(schema: impl Into<String>) = schema.into(), get_schema: &str;
    /// The outbox table. Its migrations are recorded in `<table>_migrations`.
    /// Default [`DEFAULT_TABLE`](Self::DEFAULT_TABLE).
    table(table: impl Into<String>) = table.into(), get_table: &str;
    /// The inbox table. Outbox tables of one schema naming the same inbox
    /// share it: the first to migrate makes it. Default
    /// [`DEFAULT_INBOX_TABLE`](Self::DEFAULT_INBOX_TABLE).
    inbox_table(table: impl Into<String>) = table.into(), get_inbox_table: &str;
    /// What happens to published rows; default [`Retention::Delete`].
    retention(retention: Retention), get_retention: Retention;
    /// How the outbox table is laid out ([`Layout::Plain`] by default;
    /// [`Layout::Rotated`] where long transactions or lagging replicas
    /// may hold back vacuum). [`migrate`](crate::PgOutboxStore::migrate)
    /// builds the table in this layout, or converts a plain one.
    layout(layout: Layout), get_layout: Layout;
    /// Whether commits through [`begin`](crate::PgOutboxStore::begin)
    /// contexts hint relays in other processes (on by default). Hints are
    /// sent only while such a relay listens; turn them off where every
    /// route this process stages is also relayed in this process, as when
    /// each replica of a service runs its own relay: the local relay is
    /// woken at commit, and the other replicas' relays, which would only
    /// compete for the same rows, keep polling instead. Transactions that
    /// announce inside themselves (`begin_on`, `context`) are not affected.
    remote_hints(enabled: bool), get_remote_hints: bool;
    /// How relays' claims hold their rows ([`ClaimMode::Locked`] by
    /// default; [`ClaimMode::Leased`] for publishes that may outlast the
    /// lease or must not hold a connection). Stores of either mode can
    /// relay one table side by side.
    claim_mode(mode: ClaimMode), get_claim_mode: ClaimMode;
    /// The most connections locked claims hold at once (at least one).
    /// They are the store's own, opened with the pool's settings and kept
    /// between batches, so a locked batch pays no pool checks and its claim
    /// and settle each take one round trip; a claim finding them all in
    /// use waits for one. They come on top of the pool's connections, with
    /// one more for [claim records](ClaimMode::Locked). Behind a
    /// transaction pooler ([`Pooling::Transaction`]) they are the pool's
    /// own instead, so this must be below the pool's `max_connections`.
    /// Default [`DEFAULT_CLAIM_CONNECTIONS`](Self::DEFAULT_CLAIM_CONNECTIONS).
    claim_connections(max: usize) = max.max(1), get_claim_connections: usize;
    /// The most locked claims of one per-key route that run at once,
    /// across every relay on the table (at least one; default
    /// [`DEFAULT_PER_KEY_CLAIMS`](Self::DEFAULT_PER_KEY_CLAIMS)). A
    /// claim finding every place taken waits up to about a second for one
    /// to free, then takes nothing, and its relay tries again at its next
    /// poll or wake-up; a claim that ends, settled or its relay dead,
    /// frees its place at once, so relays standing by take over within
    /// moments.
    ///
    /// Each per-key claim walks every key with unfinished rows and passes
    /// over those another claim holds, so claims running side by side
    /// share the keys but each pays for the whole walk: on one database,
    /// a second place costs more than it adds (`tidings-bench scale-out`,
    /// `docs/benchmarks.md`). More places can pay where publishing, not
    /// the database, bounds a relay. The places are advisory locks of the
    /// claims' transactions, keyed on the table and the route; leased
    /// claims, which commit at once, are not limited.
    ///
    /// ```
    /// use tidings_postgres::PgOutboxOptions;
    ///
    /// let options = PgOutboxOptions::new();
    /// assert_eq!(options.get_per_key_claims(), 1);
    /// assert_eq!(options.per_key_claims(0).get_per_key_claims(), 1);
    /// ```
    per_key_claims(max: usize) = max.max(1), get_per_key_claims: usize;
    /// How the pool reaches PostgreSQL ([`Pooling::Direct`] by default).
    /// Behind a pooler in transaction mode (PgBouncer's `pool_mode =
    /// transaction`, RDS Proxy, Supabase's pooler), set
    /// [`Pooling::Transaction`]: the store then prepares nothing by name,
    /// sets and locks nothing outside a transaction, and opens no
    /// connection beyond the pool. Your own statements in a
    /// [`PgContext`](crate::PgContext) need `.persistent(false)` there too.
    /// [`PgOutboxStore::new`](crate::PgOutboxStore::new) refuses locked
    /// claims behind such a pooler when
    /// [`claim_connections`](Self::claim_connections) would take the whole
    /// pool.
    pooling(pooling: Pooling), get_pooling: Pooling;
    /// Where [wake-up sources](crate::PgOutboxStore::wakeup_source) connect, when not
    /// through the pool: a direct connection to the server (none by
    /// default). Behind a pooler in transaction mode, which cannot carry a
    /// `LISTEN`, give the server's own address here; without it, a
    /// listener wakes its relay only for this process's commits, and relays
    /// elsewhere find other processes' events by polling.
    listen_options(options: PgConnectOptions) = Some(options),
        get_listen_options: Option<&PgConnectOptions> = as_ref();
    /// Relays through the log rather than by claims: staging writes the
    /// outbox table's rows for a publication, or logical decoding messages
    /// and no row at all, and [`migrate`](crate::PgOutboxStore::migrate)
    /// creates the publication and the replication slot (see the
    /// `tailing` module and, with the `wal` feature,
    /// [`WalStore`](crate::wal::WalStore)). Needs `wal_level = logical`
    /// and a plain table ([`Layout::Plain`]). Default: none, a polling
    /// relay claims rows.
    log_tailing(tailing: LogTailing) = Some(tailing),
        get_log_tailing: Option<&LogTailing> = as_ref();
    /// The clock stamping staged events (`occurred_at` and hybrid-clock
    /// stamps); default: the system clock. Lease and retry times always use
    /// the database clock.
    clock(clock: SharedClock), get_clock: &SharedClock;
});

impl Default for PgOutboxOptions {
    fn default() -> Self {
        Self {
            schema: Self::DEFAULT_SCHEMA.to_owned(),
            table: Self::DEFAULT_TABLE.to_owned(),
            inbox_table: Self::DEFAULT_INBOX_TABLE.to_owned(),
            retention: Retention::default(),
            layout: Layout::default(),
            remote_hints: true,
            claim_mode: ClaimMode::default(),
            claim_connections: Self::DEFAULT_CLAIM_CONNECTIONS,
            per_key_claims: Self::DEFAULT_PER_KEY_CLAIMS,
            pooling: Pooling::default(),
            listen_options: None,
            log_tailing: None,
            clock: SystemClock::shared(),
        }
    }
}
