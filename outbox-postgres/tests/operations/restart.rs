//! The listener survives a database restart. The server restarted is a
//! private throwaway cluster on a port of its own, so tests sharing the
//! main server are not disturbed.

use crate::support;

use std::time::{Duration, Instant};

use sqlx::postgres::PgPoolOptions;
use support::cluster::PrivateCluster;
use support::{LISTENING_BACKENDS, ORDER_EVENTS};
use tidings_core::{Backoff, ClaimRequest, ClaimedBatch, OutboxStore, Outcome, Wakeup};
use tidings_postgres::{PgOutboxOptions, PgOutboxStore, PgWakeupSource};
use tidings_testing::eventually::eventually;
use tidings_testing::services::service_missing;
use tidings_testing::store::settle_all;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Claims whenever woken (never by polling) and reports each claim;
/// errors while the server is down are retried.
fn relay(
    store: PgOutboxStore,
    wakeup: Wakeup,
    cancel: CancellationToken,
) -> mpsc::UnboundedReceiver<Instant> {
    let (claimed, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = wakeup.notified() => {}
            }
            let request = ClaimRequest {
                route: ORDER_EVENTS.route(),
                limit: 10,
                lease: Duration::from_secs(60),
                after: None,
            };
            let Ok(batch) = store.claim(request).await else {
                continue;
            };
            if batch.records().is_empty() {
                continue;
            }
            let _ = claimed.send(Instant::now());
            let done = settle_all(&batch, Outcome::Published);
            let _ = batch.settle(done).await;
        }
    });
    rx
}

/// Waits for a session holding the listener's presence lock; queries
/// fail while the server restarts, and are tried again.
async fn wait_for_listener(store: &PgOutboxStore) {
    let listening = || async {
        let found: Result<Vec<i32>, _> = sqlx::query_scalar(LISTENING_BACKENDS)
            .bind(PgWakeupSource::PRESENCE_LOCK_SPACE)
            .bind(store.channel())
            .fetch_all(store.pool())
            .await;
        found.is_ok_and(|backends| !backends.is_empty())
    };
    let listened = eventually(Duration::from_secs(30), listening, |found| *found).await;
    assert!(listened, "the listener never listened");
}

/// How soon after a commit its wake-up has the claim made: far below any
/// poll, with room for a loaded machine running a debug build.
const WOKEN_WITHIN: Duration = Duration::from_secs(1);

async fn commit_one(store: &PgOutboxStore, n: u64) -> Instant {
    let mut ctx = store.begin().await.unwrap();
    ctx.outbox()
        .stage(&ORDER_EVENTS, "order.placed", &n)
        .unwrap();
    ctx.commit().await.unwrap();
    // Measured from the moment the commit is acknowledged.
    Instant::now()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_listener_reconnects_after_the_database_restarts() {
    let cluster = tokio::task::spawn_blocking(PrivateCluster::create)
        .await
        .unwrap();
    let pool = PgPoolOptions::new()
        .max_connections(4)
        .acquire_timeout(Duration::from_secs(10))
        .connect(&cluster.url())
        .await
        .unwrap_or_else(|e| service_missing("private PostgreSQL cluster", &cluster.url(), &e));
    let store = PgOutboxStore::new(pool, PgOutboxOptions::new().schema("restart")).unwrap();
    store.migrate().await.unwrap();

    let wakeup = Wakeup::new();
    let cancel = CancellationToken::new();
    let listener = store
        .wakeup_source(wakeup.clone())
        .reconnect_backoff(Backoff::new(
            Duration::from_millis(100),
            Duration::from_millis(500),
        ))
        .spawn(cancel.clone());
    let mut claimed = relay(store.clone(), wakeup, cancel.clone());
    wait_for_listener(&store).await;
    // The first claim opens the store's claim connection, a TLS handshake
    // of about 90 ms in a debug build: made before measuring.
    commit_one(&store, 0).await;
    let warmed = tokio::time::timeout(Duration::from_secs(5), claimed.recv()).await;
    warmed.expect("woken by the first commit").unwrap();

    let committed = commit_one(&store, 1).await;
    let at = tokio::time::timeout(Duration::from_secs(5), claimed.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(
        at - committed < WOKEN_WITHIN,
        "claimed {:?} after commit",
        at - committed
    );

    let cluster = tokio::task::spawn_blocking(move || {
        cluster.ctl("restart");
        cluster
    })
    .await
    .unwrap();
    wait_for_listener(&store).await;
    // Replace the pool's dead connections before measuring: a new one
    // costs a TLS handshake, about 90 ms in a debug build.
    let fresh = futures::future::try_join_all((0..3).map(|_| store.pool().acquire()));
    drop(fresh.await.unwrap());
    // Anything the reconnection's own wake-up found is drained first.
    while claimed.try_recv().is_ok() {}

    let committed = commit_one(&store, 2).await;
    let at = tokio::time::timeout(Duration::from_secs(5), claimed.recv())
        .await
        .expect("woken after the restart")
        .unwrap();
    assert!(
        at - committed < WOKEN_WITHIN,
        "claimed {:?} after commit",
        at - committed
    );

    cancel.cancel();
    listener.await.unwrap();
    store.pool().close().await;
    tokio::task::spawn_blocking(move || drop(cluster))
        .await
        .unwrap();
}
