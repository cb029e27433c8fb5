//! A log-tailing store on the logical cluster, a relay reading its slot,
//! and a publisher recording what it is given.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use sqlx::PgPool;
use sqlx::postgres::PgPoolOptions;
use tidings_core::relay::{Relay, RelayOptions};
use tidings_core::{Envelope, OutboxSpec, PublishError};
use tidings_postgres::wal::{WalOptions, WalStore};
use tidings_postgres::{LogTailing, PgOutboxOptions, PgOutboxStore, Retention, TailMode};
use tidings_testing::names::unique_name;
use tidings_testing::publisher::{PublishEach, PublishOne};
use tidings_testing::services::{logical_database_url, service_missing};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::support::{KEYED_EVENTS, ORDER_EVENTS, SCHEMA_PREFIX};

/// A pool on the cluster with `wal_level=logical`; fails the test with the
/// setup command when it does not answer.
pub(crate) async fn logical_pool() -> PgPool {
    let url = logical_database_url();
    let pool = PgPoolOptions::new()
        .max_connections(6)
        .acquire_timeout(Duration::from_secs(10))
        .connect(&url)
        .await
        .unwrap_or_else(|e| service_missing("PostgreSQL with wal_level=logical", &url, &e));
    drop_stale_slots(&pool).await;
    pool
}

/// A migrated log-tailing store in a fresh schema, with a slot and a
/// publication of its own.
pub(crate) async fn tailing_store(mode: TailMode, retention: Retention) -> PgOutboxStore {
    let schema = unique_name(SCHEMA_PREFIX);
    let tailing = match mode {
        TailMode::Table => LogTailing::table(),
        TailMode::Messages => LogTailing::messages(),
    };
    let options = PgOutboxOptions::new()
        .schema(&schema)
        .retention(retention)
        .log_tailing(
            tailing
                .slot(format!("{schema}_slot"))
                .publication(format!("{schema}_pub")),
        );
    let store = PgOutboxStore::new(logical_pool().await, options).expect("valid names");
    store.migrate().await.expect("migrate");
    store
}

/// Starts a reader of the store's slot for the two test routes.
pub(crate) fn wal_store(store: &PgOutboxStore) -> WalStore {
    let options = WalOptions::new(&logical_database_url())
        .expect("a valid URL")
        .route(&ORDER_EVENTS)
        .route(&KEYED_EVENTS);
    WalStore::start(store.clone(), options).expect("a tailing store")
}

/// A relay of `spec` from `wal` to `publisher`, running until its token
/// is cancelled.
pub(crate) fn run_relay(
    wal: &WalStore,
    spec: &OutboxSpec<u64>,
    publisher: PublishEach<Recorder>,
) -> (
    CancellationToken,
    JoinHandle<Result<(), tidings_core::StoreError>>,
) {
    let options = RelayOptions::default().poll_interval(Duration::from_millis(200));
    let relay = Relay::new(wal.clone(), publisher, spec)
        .expect("a valid spec")
        .options(options)
        .wakeup(wal.wakeup());
    let cancel = CancellationToken::new();
    let token = cancel.clone();
    let handle = tokio::spawn(async move { relay.run(token).await });
    (cancel, handle)
}

/// Drops the store's slot, publication and schema.
pub(crate) async fn drop_tailing(store: &PgOutboxStore) {
    let schema = store.options().get_schema().to_owned();
    let pool = store.pool();
    for _ in 0..50 {
        let dropped: Result<Option<i64>, _> = sqlx::query_scalar(
            "select count(pg_drop_replication_slot(slot_name)) from pg_replication_slots \
             where slot_name = $1 and not active",
        )
        .bind(format!("{schema}_slot"))
        .fetch_optional(pool)
        .await;
        let left: i64 =
            sqlx::query_scalar("select count(*) from pg_replication_slots where slot_name = $1")
                .bind(format!("{schema}_slot"))
                .fetch_one(pool)
                .await
                .unwrap_or(0);
        if dropped.is_ok() && left == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let drop = format!("drop publication if exists \"{schema}_pub\"");
    let _ = sqlx::raw_sql(sqlx::AssertSqlSafe(drop)).execute(pool).await;
    tidings_testing::services::drop_schema(pool, &schema).await;
}

/// Schemas, slots and publications of tests that stopped early: schemas
/// migrated more than 15 minutes ago, and the slots and publications of
/// schemas that no longer exist, dropped once per test process.
async fn drop_stale_slots(pool: &PgPool) {
    static DONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if DONE.swap(true, std::sync::atomic::Ordering::SeqCst) {
        return;
    }
    let pattern = format!("{SCHEMA_PREFIX}\\_%");
    let schemas: Vec<String> =
        sqlx::query_scalar("select nspname::text from pg_namespace where nspname like $1")
            .bind(&pattern)
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
    let _ = sqlx::query(
        "select pg_drop_replication_slot(slot_name) from pg_replication_slots \
         where slot_name like $1 and not active \
         and not exists (select 1 from pg_namespace where nspname || '_slot' = slot_name)",
    )
    .bind(&pattern)
    .execute(pool)
    .await;
    let publications: Vec<String> = sqlx::query_scalar(
        "select pubname::text from pg_publication where pubname like $1 \
         and not exists (select 1 from pg_namespace where nspname || '_pub' = pubname)",
    )
    .bind(&pattern)
    .fetch_all(pool)
    .await
    .unwrap_or_default();
    for publication in publications {
        let drop = format!("drop publication if exists \"{publication}\"");
        let _ = sqlx::raw_sql(sqlx::AssertSqlSafe(drop)).execute(pool).await;
    }
}

/// A broker that records what it accepts, and fails the events it is told
/// to: some once, some always.
#[derive(Debug, Clone)]
pub(crate) struct Recorder {
    inner: Arc<Mutex<Recorded>>,
    /// One slow publish at a time.
    turns: Arc<tokio::sync::Semaphore>,
}

impl Default for Recorder {
    fn default() -> Self {
        Self {
            inner: Arc::default(),
            turns: Arc::new(tokio::sync::Semaphore::new(1)),
        }
    }
}

#[derive(Debug, Default)]
struct Recorded {
    accepted: Vec<Envelope>,
    fail_once: Vec<Uuid>,
    poison: Vec<Uuid>,
    delay: Duration,
}

impl Recorder {
    pub(crate) fn publisher() -> PublishEach<Recorder> {
        PublishEach::new(Recorder::default())
    }

    /// What was accepted, in order.
    pub(crate) fn accepted(&self) -> Vec<Envelope> {
        self.lock().accepted.clone()
    }

    /// The payloads accepted, as numbers, in order.
    pub(crate) fn numbers(&self) -> Vec<u64> {
        self.accepted()
            .iter()
            .map(|e| serde_json::from_slice(&e.payload).expect("a number"))
            .collect()
    }

    pub(crate) fn fail_once(&self, id: Uuid) {
        self.lock().fail_once.push(id);
    }

    pub(crate) fn poison(&self, id: Uuid) {
        self.lock().poison.push(id);
    }

    /// Takes every event from now on.
    pub(crate) fn cure(&self) {
        self.lock().poison.clear();
    }

    /// Takes this long over each publish, one publish at a time.
    pub(crate) fn slow(&self, delay: Duration) {
        self.lock().delay = delay;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Recorded> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl PublishOne for Recorder {
    async fn publish_one(&self, envelope: &Envelope) -> Result<(), PublishError> {
        let delay = self.lock().delay;
        if !delay.is_zero() {
            let _turn = self.turns.acquire().await;
            tokio::time::sleep(delay).await;
        }
        let mut recorded = self.lock();
        if recorded.poison.contains(&envelope.event_id) {
            return Err(PublishError::Invalid {
                reason: "poison".into(),
            });
        }
        if let Some(at) = recorded
            .fail_once
            .iter()
            .position(|id| *id == envelope.event_id)
        {
            recorded.fail_once.remove(at);
            return Err(PublishError::Refused {
                reason: "try again".into(),
            });
        }
        recorded.accepted.push(envelope.clone());
        Ok(())
    }
}
