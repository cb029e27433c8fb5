//! What every test of this crate shares: a pool on the real server and a
//! migrated store in a schema of its own.

// Each test file uses its own subset of these helpers.
#![allow(dead_code)]

pub(crate) mod billing;
pub(crate) mod cluster;
pub(crate) mod pooler;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use tidings_core::memory::MemoryBroker;
use tidings_core::relay::{Relay, RelayOptions};
use tidings_core::{ClaimedBatch, OutboxSpec, Outcome, StagedEvent, Wakeup};
use tidings_postgres::{
    ClaimMode, PgBatch, PgOutboxOptions, PgOutboxStore, PgWakeupSource, Retention,
};
use tidings_testing::names::unique_name;
use tidings_testing::services::{database_url, service_missing};
use tidings_testing::store::{claim_leased, settle_all};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Schemas made by these tests start with this, so the janitor finds them.
pub(crate) const SCHEMA_PREFIX: &str = "tidings_test";

/// The spec most tests stage through.
pub(crate) static ORDER_EVENTS: OutboxSpec<u64> =
    OutboxSpec::json("order-events").destination("orders");
/// A per-key spec.
pub(crate) static KEYED_EVENTS: OutboxSpec<u64> = OutboxSpec::json("keyed-events")
    .destination("orders")
    .per_key();

/// A pool of up to `max_connections` on `url`; fails the test with the
/// setup command when `service` does not answer there.
pub(crate) async fn connect(service: &str, url: &str, max_connections: u32) -> PgPool {
    PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(Duration::from_secs(10))
        .connect(url)
        .await
        .unwrap_or_else(|e| service_missing(service, url, &e))
}

/// A pool on `DATABASE_URL`; fails the test with the setup command when the
/// server does not answer.
pub(crate) async fn pool(max_connections: u32) -> PgPool {
    let pool = connect("PostgreSQL", &database_url(), max_connections).await;
    drop_stale_schemas(&pool).await;
    pool
}

/// A migrated store in a fresh schema.
pub(crate) async fn store(retention: Retention) -> PgOutboxStore {
    store_on(pool(8).await, retention).await
}

/// A migrated store in a fresh schema, claiming in `mode`.
pub(crate) async fn store_with(retention: Retention, mode: ClaimMode) -> PgOutboxStore {
    store_on_with(pool(8).await, retention, mode).await
}

/// A migrated store in a fresh schema on `pool`, claiming in the default
/// mode.
pub(crate) async fn store_on(pool: PgPool, retention: Retention) -> PgOutboxStore {
    store_on_with(pool, retention, ClaimMode::default()).await
}

/// A migrated store in a fresh schema on `pool`, claiming in `mode`.
pub(crate) async fn store_on_with(
    pool: PgPool,
    retention: Retention,
    mode: ClaimMode,
) -> PgOutboxStore {
    let options = PgOutboxOptions::new().retention(retention).claim_mode(mode);
    store_on_options(pool, options).await
}

/// A migrated store on `pool` with `options`, in a fresh schema.
pub(crate) async fn store_on_options(pool: PgPool, options: PgOutboxOptions) -> PgOutboxStore {
    let options = options.schema(unique_name(SCHEMA_PREFIX));
    let store = PgOutboxStore::new(pool, options).expect("valid names");
    store.migrate().await.expect("migrate");
    store
}

/// Drops the store's schema and everything in it.
///
/// A session of a peer store that a case dropped may still be ending, a
/// claim's transaction begun ahead with it; the server then may pick the
/// drop as a deadlock's victim, and the drop is tried again.
pub(crate) async fn drop_schema(store: &PgOutboxStore) {
    let schema = store.options().get_schema();
    tidings_testing::services::drop_schema(store.pool(), schema).await;
}

/// Commits `events` through the store's staging path.
pub(crate) async fn commit(store: &PgOutboxStore, events: Vec<StagedEvent>) {
    let mut ctx = store.begin().await.expect("begin");
    for event in events {
        ctx.outbox().push(event);
    }
    ctx.commit().await.expect("commit");
}

/// Stages `events` events of `spec`, numbered from 0, in one transaction.
pub(crate) async fn stage_to(store: &PgOutboxStore, spec: &OutboxSpec<u64>, events: u64) {
    let mut ctx = store.begin().await.unwrap();
    for n in 0..events {
        ctx.outbox().stage(spec, "test.event", &n).unwrap();
    }
    ctx.commit().await.unwrap();
}

/// Stages one event of [`ORDER_EVENTS`] under the chosen `id`, in a
/// transaction of its own.
pub(crate) async fn stage_with_id(store: &PgOutboxStore, id: uuid::Uuid) {
    let mut ctx = store.begin().await.unwrap();
    ctx.outbox()
        .stage(&ORDER_EVENTS, "order.placed", &1)
        .unwrap()
        .event_id(id);
    ctx.commit().await.unwrap();
}

/// Claims up to `limit` rows of [`ORDER_EVENTS`] under `lease`.
pub(crate) async fn claim_orders(store: &PgOutboxStore, limit: usize, lease: Duration) -> PgBatch {
    claim_leased(store, ORDER_EVENTS.route(), limit, lease).await
}

/// Commits event `n` of [`ORDER_EVENTS`] and waits up to 5 s for a relay
/// to report its claim on `claimed`; how long after the commit's
/// acknowledgement the claim came.
pub(crate) async fn commit_and_time_claim(
    store: &PgOutboxStore,
    claimed: &mut mpsc::UnboundedReceiver<Instant>,
    n: u64,
) -> Duration {
    let mut ctx = store.begin().await.unwrap();
    ctx.outbox()
        .stage(&ORDER_EVENTS, "order.placed", &n)
        .unwrap();
    ctx.commit().await.unwrap();
    let committed = Instant::now();
    let at = tokio::time::timeout(Duration::from_secs(5), claimed.recv())
        .await
        .expect("woken by the commit")
        .expect("the relay reports its claims");
    at - committed
}

/// A pool whose connections, and so the store's claim connections opened
/// with its settings, carry `application_name`.
pub(crate) async fn named_pool(application_name: &str) -> PgPool {
    let options: PgConnectOptions = database_url().parse().unwrap();
    PgPoolOptions::new()
        .max_connections(2)
        .connect_with(options.application_name(application_name))
        .await
        .unwrap()
}

/// A relay of [`ORDER_EVENTS`] with `options`, publishing to an in-memory
/// broker with the `orders` queue declared, and that broker.
pub(crate) fn orders_relay(
    store: &PgOutboxStore,
    options: RelayOptions,
) -> (Relay<PgOutboxStore, MemoryBroker>, MemoryBroker) {
    let broker = MemoryBroker::new();
    broker.declare_queue("orders");
    let relay = Relay::new(store.clone(), broker.clone(), &ORDER_EVENTS)
        .expect("a valid spec")
        .options(options);
    (relay, broker)
}

/// Settles every row of `batch` as published; returns how many were.
pub(crate) async fn publish_all(batch: PgBatch) -> usize {
    let settlements = settle_all(&batch, Outcome::Published);
    batch.settle(settlements).await.unwrap().published
}

/// Runs `sql`, one statement or several, on `pool`.
pub(crate) async fn run_sql(pool: &PgPool, sql: String) {
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
        .execute(pool)
        .await
        .expect("a test's own statement");
}

/// Rows in the store's outbox table, whatever their route or status.
pub(crate) async fn row_count(store: &PgOutboxStore) -> i64 {
    let sql = format!(
        "select count(*) from \"{}\".\"{}\"",
        store.options().get_schema(),
        store.options().get_table()
    );
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .fetch_one(store.pool())
        .await
        .expect("count rows")
}

/// Test schemas left behind by runs that stopped early (conformance cases
/// cannot drop theirs): those migrated more than 15 minutes ago are dropped,
/// once per test process.
async fn drop_stale_schemas(pool: &PgPool) {
    static DONE: AtomicBool = AtomicBool::new(false);
    if DONE.swap(true, Ordering::SeqCst) {
        return;
    }
    drop_stale_schemas_on(pool).await;
}

/// Drops the test schemas on `pool`'s server migrated more than 15 minutes
/// ago.
pub(crate) async fn drop_stale_schemas_on(pool: &PgPool) {
    let pattern = format!("{SCHEMA_PREFIX}\\_%");
    let schemas: Vec<String> =
        sqlx::query_scalar("select nspname::text from pg_namespace where nspname like $1")
            .bind(pattern)
            .fetch_all(pool)
            .await
            .unwrap_or_default();
    for schema in schemas {
        let age = format!(
            "select coalesce(min(applied_at) < now() - interval '15 minutes', true) \
             from \"{schema}\".tidings_outbox_migrations"
        );
        let stale: bool = sqlx::query_scalar(sqlx::AssertSqlSafe(age))
            .fetch_one(pool)
            .await
            .unwrap_or(false);
        if stale {
            let drop = format!("drop schema if exists \"{schema}\" cascade");
            let _ = sqlx::raw_sql(sqlx::AssertSqlSafe(drop)).execute(pool).await;
        }
    }
}

/// The backends holding a listener's presence lock on a channel: $1 the
/// lock space, $2 the channel.
pub(crate) const LISTENING_BACKENDS: &str = "select pid from pg_locks \
    where locktype = 'advisory' and classid = $1::int4::oid \
    and objid = hashtext($2)::oid and objsubid = 2 and granted order by pid";

/// The server processes of the sessions listening on the store's channel,
/// found by the presence lock each holds while it listens.
pub(crate) async fn listening_backends(store: &PgOutboxStore) -> Vec<i32> {
    sqlx::query_scalar(LISTENING_BACKENDS)
        .bind(tidings_postgres::PgWakeupSource::PRESENCE_LOCK_SPACE)
        .bind(store.channel())
        .fetch_all(store.pool())
        .await
        .expect("pg_locks")
}

/// The server process of a session listening on the store's channel
/// other than `not`, once there is one; fails the test after 10 s.
pub(crate) async fn listening_backend(store: &PgOutboxStore, not: Option<i32>) -> i32 {
    let started = std::time::Instant::now();
    loop {
        let found = listening_backends(store).await.into_iter();
        if let Some(pid) = found.into_iter().find(|pid| Some(*pid) != not) {
            return pid;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the listener never listened"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A listener running on a task of its own, its session listening.
pub(crate) struct Listening {
    cancel: CancellationToken,
    task: JoinHandle<()>,
    /// The server process of its listening session.
    pub(crate) backend: i32,
}

impl Listening {
    /// Spawns `source`, a listener on `store`'s channel, and waits until
    /// its session listens.
    pub(crate) async fn start(store: &PgOutboxStore, source: PgWakeupSource) -> Self {
        let cancel = CancellationToken::new();
        let task = source.spawn(cancel.clone());
        let backend = listening_backend(store, None).await;
        Self {
            cancel,
            task,
            backend,
        }
    }

    /// Starts the store's own listener, waking the wake-up it returns.
    pub(crate) async fn own(store: &PgOutboxStore) -> (Self, Wakeup) {
        let wakeup = Wakeup::new();
        let listening = Self::start(store, store.wakeup_source(wakeup.clone())).await;
        (listening, wakeup)
    }

    /// Stops the listener and waits for its task to end.
    pub(crate) async fn stop(self) {
        self.cancel.cancel();
        self.task.await.expect("the listener does not panic");
    }
}
