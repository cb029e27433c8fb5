//! The listener survives a database restart. The server restarted is a
//! private throwaway cluster on a port of its own, so tests sharing the
//! main server are not disturbed.

use crate::support;

use std::time::{Duration, Instant};

use support::cluster::PrivateCluster;
use support::{LISTENING_BACKENDS, Listening, ORDER_EVENTS, commit_and_time_claim};
use tidings_core::{Backoff, ClaimRequest, ClaimedBatch, OutboxStore, Outcome, Wakeup};
use tidings_postgres::{PgOutboxOptions, PgOutboxStore, PgWakeupSource};
use tidings_testing::eventually::eventually;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_listener_reconnects_after_the_database_restarts() {
    let cluster = PrivateCluster::made(PrivateCluster::create).await;
    let pool = cluster.pool(4).await;
    let store = PgOutboxStore::new(pool, PgOutboxOptions::new().schema("restart")).unwrap();
    store.migrate().await.unwrap();

    let wakeup = Wakeup::new();
    let backoff = Backoff::new(Duration::from_millis(100), Duration::from_millis(500));
    let source = store
        .wakeup_source(wakeup.clone())
        .reconnect_backoff(backoff);
    let listener = Listening::start(&store, source).await;
    let cancel = CancellationToken::new();
    let mut claimed = relay(store.clone(), wakeup, cancel.clone());
    // The first claim opens the store's claim connection, a TLS handshake
    // of about 90 ms in a debug build: made before measuring.
    commit_and_time_claim(&store, &mut claimed, 0).await;

    let latency = commit_and_time_claim(&store, &mut claimed, 1).await;
    assert!(latency < WOKEN_WITHIN, "claimed {latency:?} after commit");

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

    let latency = commit_and_time_claim(&store, &mut claimed, 2).await;
    assert!(latency < WOKEN_WITHIN, "claimed {latency:?} after commit");

    cancel.cancel();
    listener.stop().await;
    store.pool().close().await;
    cluster.remove().await;
}
