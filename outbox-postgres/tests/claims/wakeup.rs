//! The wake-up: a commit in another process wakes the relay through
//! LISTEN/NOTIFY within milliseconds, also after the listener's connection
//! was lost; a commit through the listener's own store wakes it directly.

use crate::support;

use std::time::{Duration, Instant};

use support::{
    Listening, ORDER_EVENTS, claim_orders, commit_and_time_claim, drop_schema, listening_backend,
    publish_all, store,
};
use tidings_core::{ClaimedBatch, Wakeup};
use tidings_postgres::{PgOutboxStore, Retention};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const POLL_INTERVAL: Duration = Duration::from_secs(10);
const WAKE_LATENCY: Duration = Duration::from_millis(100);

/// A relay loop on a task of its own: claims when woken, otherwise every
/// 10 s, and reports when it claimed something.
struct RelayLoop {
    claimed: mpsc::UnboundedReceiver<Instant>,
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

impl RelayLoop {
    fn start(store: PgOutboxStore, wakeup: Wakeup) -> Self {
        let cancel = CancellationToken::new();
        let stop = cancel.clone();
        let (claimed, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = wakeup.notified() => {}
                    _ = tokio::time::sleep(POLL_INTERVAL) => {}
                }
                let batch = claim_orders(&store, 10, Duration::from_secs(60)).await;
                if batch.records().is_empty() {
                    continue;
                }
                let _ = claimed.send(Instant::now());
                publish_all(batch).await;
            }
        });
        Self {
            claimed: rx,
            cancel,
            task,
        }
    }

    /// Stops the loop and waits for its task to end.
    async fn stop(self) {
        self.cancel.cancel();
        self.task.await.expect("the relay loop does not panic");
    }
}

/// Opens `n` pooled connections at once, so later acquires find them idle.
async fn warm_pool(store: &PgOutboxStore, n: usize) {
    let connections = futures::future::try_join_all((0..n).map(|_| store.pool().acquire()));
    drop(connections.await.unwrap());
}

/// A second store on the same table, standing for a producer in another
/// process: its commits reach the listener only by `NOTIFY`.
fn other_process(store: &PgOutboxStore) -> PgOutboxStore {
    PgOutboxStore::new(store.pool().clone(), store.options().clone()).unwrap()
}

/// Runs two events through the relay untimed: the first batch's settle
/// opens the connection that claim records are written on, and the second
/// is claimed only once that settle is done.
async fn warm_relay(store: &PgOutboxStore, claimed: &mut mpsc::UnboundedReceiver<Instant>) {
    for n in 1000..1002 {
        commit_and_time_claim(store, claimed, n).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::print_stderr)] // reports the latency
async fn a_committed_event_is_claimed_within_100_ms_despite_a_10_s_poll() {
    let store = store(Retention::Delete).await;
    let (listener, wakeup) = Listening::own(&store).await;
    let mut relay = RelayLoop::start(store.clone(), wakeup);
    // A relay runs for long: measure it warm, with the pool's connections
    // open (a new one costs a TLS handshake, about 90 ms in a debug build)
    // and the statements prepared.
    warm_pool(&store, 4).await;
    let producer = other_process(&store);
    warm_relay(&producer, &mut relay.claimed).await;

    let mut slowest = Duration::ZERO;
    for n in 0..5 {
        let latency = commit_and_time_claim(&producer, &mut relay.claimed, n).await;
        assert!(latency < WAKE_LATENCY, "claimed {latency:?} after commit");
        slowest = slowest.max(latency);
    }
    eprintln!("slowest of 5 commit-to-claim latencies: {slowest:?}");
    relay.stop().await;
    listener.stop().await;
    drop_schema(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_listener_reconnects_after_losing_its_connection() {
    let store = store(Retention::Delete).await;
    let (listener, wakeup) = Listening::own(&store).await;
    let first = listener.backend;
    let mut relay = RelayLoop::start(store.clone(), wakeup);
    warm_pool(&store, 4).await;
    // The producer's first hint opens its connection; measure it warm.
    let producer = other_process(&store);
    warm_relay(&producer, &mut relay.claimed).await;

    // Only this test's own listening session is terminated.
    let terminated: bool = sqlx::query_scalar("select pg_terminate_backend($1)")
        .bind(first)
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert!(terminated);
    let second = listening_backend(&store, Some(first)).await;
    assert_ne!(first, second);

    let latency = commit_and_time_claim(&producer, &mut relay.claimed, 1).await;
    assert!(latency < WAKE_LATENCY, "claimed {latency:?} after commit");
    relay.stop().await;
    listener.stop().await;
    drop_schema(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_through_the_listeners_own_store_wakes_it_in_process() {
    let store = store(Retention::Delete).await;
    let wakeup = Wakeup::new();
    // Made but never run: no LISTEN, so only the in-process wake-up can
    // reach the relay before its 10 s poll.
    let listener = store.wakeup_source(wakeup.clone());
    let mut relay = RelayLoop::start(store.clone(), wakeup);
    warm_pool(&store, 4).await;
    warm_relay(&store, &mut relay.claimed).await;

    for n in 0..3 {
        let latency = commit_and_time_claim(&store.clone(), &mut relay.claimed, n).await;
        assert!(latency < WAKE_LATENCY, "claimed {latency:?} after commit");
    }

    // Without the listener the store has no one to wake.
    drop(listener);
    let mut ctx = store.begin().await.unwrap();
    ctx.outbox()
        .stage(&ORDER_EVENTS, "order.placed", &9)
        .unwrap();
    ctx.commit().await.unwrap();
    let woken = tokio::time::timeout(Duration::from_millis(500), relay.claimed.recv()).await;
    assert!(woken.is_err(), "a dropped listener was still woken");
    relay.stop().await;
    drop_schema(&store).await;
}
