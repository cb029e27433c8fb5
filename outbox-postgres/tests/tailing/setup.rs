//! A log-tailing store on the logical cluster, a relay reading its slot,
//! and a publisher recording what it is given.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use sqlx::PgPool;
use tidings_core::relay::{Relay, RelayOptions};
use tidings_core::{
    Envelope, OutboxSpec, OutboxStats, OutboxStore, PublishError, Requeue, StoreError,
};
use tidings_postgres::wal::{WalOptions, WalStore};
use tidings_postgres::{LogTailing, PgOutboxOptions, PgOutboxStore, Retention, TailMode};
use tidings_testing::eventually::eventually;
use tidings_testing::names::unique_name;
use tidings_testing::publisher::{PublishEach, PublishOne};
use tidings_testing::services::logical_database_url;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::support::{KEYED_EVENTS, ORDER_EVENTS, SCHEMA_PREFIX, connect, drop_stale_schemas_on};

/// A pool on the cluster with `wal_level=logical`; fails the test with the
/// setup command when it does not answer.
pub(crate) async fn logical_pool() -> PgPool {
    let url = logical_database_url();
    let pool = connect("PostgreSQL with wal_level=logical", &url, 6).await;
    drop_leftovers(&pool).await;
    pool
}

/// A migrated log-tailing store in `mode` in a fresh schema on `pool`, with
/// a slot and a publication of its own.
pub(crate) async fn tailing_store_on(
    pool: PgPool,
    mode: TailMode,
    options: PgOutboxOptions,
) -> PgOutboxStore {
    let schema = unique_name(SCHEMA_PREFIX);
    let tailing = LogTailing::new(mode)
        .slot(format!("{schema}_slot"))
        .publication(format!("{schema}_pub"));
    let options = options.schema(&schema).log_tailing(tailing);
    let store = PgOutboxStore::new(pool, options).expect("valid names");
    store.migrate().await.expect("migrate");
    store
}

/// Starts a reader of the store's slot, from `url`, for the two test
/// routes.
pub(crate) fn wal_store_from(store: &PgOutboxStore, url: &str) -> WalStore {
    let options = WalOptions::new(url)
        .expect("a valid URL")
        .route(&ORDER_EVENTS)
        .route(&KEYED_EVENTS);
    WalStore::start(store.clone(), options).expect("a tailing store")
}

/// Starts a reader of the store's slot on the logical cluster.
pub(crate) fn wal_store(store: &PgOutboxStore) -> WalStore {
    wal_store_from(store, &logical_database_url())
}

/// Runs a relay of [`ORDER_EVENTS`] from a reader of a store with
/// `store`'s options to `recorder`, on a runtime of its own: shut down,
/// its tasks stop where they are and its connections drop, as in a kill.
pub(crate) fn doomed_relay(
    store: &PgOutboxStore,
    recorder: &Recorder,
    options: RelayOptions,
) -> tokio::runtime::Runtime {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime");
    let store_options = store.options().clone();
    let publisher = PublishEach::new(recorder.clone());
    runtime.spawn(async move {
        // A pool of its own, which lives and dies with the runtime.
        let store = PgOutboxStore::new(logical_pool().await, store_options).unwrap();
        let wal = wal_store(&store);
        let relay = Relay::new(wal.clone(), publisher, &ORDER_EVENTS)
            .unwrap()
            .options(options)
            .wakeup(wal.wakeup());
        let _ = relay.run(CancellationToken::new()).await;
    });
    runtime
}

/// A log-tailed store, its reader, a recorder, and a relay of one spec
/// from the reader to the recorder once started.
pub(crate) struct Tailed {
    pub(crate) store: PgOutboxStore,
    pub(crate) wal: WalStore,
    pub(crate) recorder: Recorder,
    relay: Option<(CancellationToken, JoinHandle<Result<(), StoreError>>)>,
}

impl Tailed {
    /// A fresh store in `mode` on the logical cluster, and its reader.
    pub(crate) async fn new(mode: TailMode, retention: Retention) -> Self {
        let options = PgOutboxOptions::new().retention(retention);
        Self::on(tailing_store_on(logical_pool().await, mode, options).await)
    }

    /// `store` and a reader of its slot on the logical cluster.
    pub(crate) fn on(store: PgOutboxStore) -> Self {
        let wal = wal_store(&store);
        Self::reading(store, wal)
    }

    /// `store` and its reader `wal`.
    pub(crate) fn reading(store: PgOutboxStore, wal: WalStore) -> Self {
        Self {
            store,
            wal,
            recorder: Recorder::default(),
            relay: None,
        }
    }

    /// Starts relaying `spec` to the recorder.
    pub(crate) fn relay(&mut self, spec: &OutboxSpec<u64>) {
        let options = RelayOptions::default().poll_interval(Duration::from_millis(200));
        let relay = Relay::new(
            self.wal.clone(),
            PublishEach::new(self.recorder.clone()),
            spec,
        )
        .expect("a valid spec")
        .options(options)
        .wakeup(self.wal.wakeup());
        let cancel = CancellationToken::new();
        let token = cancel.clone();
        self.relay = Some((cancel, tokio::spawn(async move { relay.run(token).await })));
    }

    /// What the relay's run ended with, waiting up to 20 s for it.
    pub(crate) async fn relay_ended(&mut self) -> Result<(), StoreError> {
        let (_, handle) = self.relay.take().expect("a relay runs");
        tokio::time::timeout(Duration::from_secs(20), handle)
            .await
            .expect("the relay ends")
            .expect("the relay does not panic")
    }

    /// Stops the relay, which must have run without error.
    pub(crate) async fn stop_relay(&mut self) {
        if let Some((cancel, handle)) = self.relay.take() {
            cancel.cancel();
            handle.await.unwrap().unwrap();
        }
    }

    /// The numbers published, once there are at least `count` or after
    /// 20 s.
    pub(crate) async fn published(&self, count: usize) -> Vec<u64> {
        let recorder = &self.recorder;
        eventually(
            Duration::from_secs(20),
            || async { recorder.numbers() },
            |n| n.len() >= count,
        )
        .await
    }

    /// Requeues every failed row of `route`; how many there were.
    pub(crate) async fn requeue_all(&self, route: &str) -> u64 {
        let requeued = self.store.requeue_failed(route, Requeue::All).await;
        requeued.expect("requeue")
    }

    /// The stats of `route` once `done` holds, or after 20 s.
    pub(crate) async fn stats_when(
        &self,
        route: &str,
        done: impl Fn(&OutboxStats) -> bool,
    ) -> OutboxStats {
        let probe = || async { OutboxStore::stats(&self.wal, route).await.unwrap() };
        eventually(Duration::from_secs(20), probe, done).await
    }

    /// Stops the relay and the reader, and drops the store's slot,
    /// publication and schema.
    pub(crate) async fn finish(mut self) {
        self.stop_relay().await;
        drop(self.wal);
        drop_tailing(&self.store).await;
    }
}

/// Drops the store's slot, publication and schema.
pub(crate) async fn drop_tailing(store: &PgOutboxStore) {
    let schema = store.options().get_schema();
    tidings_testing::services::drop_tailed_schema(store.pool(), schema).await;
}

/// Schemas, slots and publications of tests that stopped early: schemas
/// migrated more than 15 minutes ago, and the slots and publications of
/// schemas that no longer exist, dropped once per test process.
async fn drop_leftovers(pool: &PgPool) {
    static DONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if DONE.swap(true, std::sync::atomic::Ordering::SeqCst) {
        return;
    }
    drop_stale_schemas_on(pool).await;
    tidings_testing::services::drop_orphan_slots(pool).await;
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
    /// Publishing it never ends, as in a relay that died on it.
    deadly: Option<Uuid>,
    /// How often publishing the deadly event began.
    deaths: usize,
    delay: Duration,
}

impl Recorder {
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

    /// Never ends publishing `id`, as a relay killed by it would not.
    pub(crate) fn deadly(&self, id: Uuid) {
        self.lock().deadly = Some(id);
    }

    /// How often publishing the deadly event began.
    pub(crate) fn deaths(&self) -> usize {
        self.lock().deaths
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
        let deadly = {
            let mut recorded = self.lock();
            let deadly = recorded.deadly == Some(envelope.event_id);
            recorded.deaths += usize::from(deadly);
            deadly
        };
        if deadly {
            return std::future::pending().await;
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
