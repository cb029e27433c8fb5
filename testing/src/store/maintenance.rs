//! Stats and purging.

use std::time::Duration;

use tidings_core::{
    ClaimedBatch, OrderingMode, OutboxStats, OutboxStore, Outcome, PurgeRequest, PurgeStatus,
};

use super::StoreHarness;
use super::fixtures::{claim, event, route, settle_all, staged};

/// Settles every row of `batch` with `outcome`.
async fn settle_every<B: ClaimedBatch>(batch: B, outcome: Outcome) {
    let settlements = settle_all(&batch, outcome);
    batch.settle(settlements).await.expect("settle");
}

/// Stats count pending, in-flight and failed rows and the oldest pending
/// row's age.
pub async fn stats_report_depth_age_and_failures<H: StoreHarness>(h: &H) {
    let store = h.store().await;
    let route = route(OrderingMode::Unordered);
    let empty = store.stats(&route.name).await.unwrap();
    assert_eq!((empty.pending, empty.oldest_pending_age), (0, None));

    h.commit(&store, (1..=3).map(|n| event(&route, n)).collect())
        .await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    let stats = store.stats(&route.name).await.unwrap();
    assert_eq!((stats.pending, stats.in_flight, stats.failed), (3, 0, 0));
    let age = stats.oldest_pending_age.expect("an age");
    assert!(
        age >= Duration::from_millis(150) && age < Duration::from_secs(60),
        "{age:?}"
    );

    let batch = claim(&store, &route, 1).await;
    let held = in_flight_soon(&store, &route.name, 1).await;
    assert_eq!((held.pending, held.in_flight), (2, 1));
    settle_every(batch, Outcome::Failed { reason: "x".into() }).await;
    let stats = store.stats(&route.name).await.unwrap();
    assert_eq!((stats.pending, stats.in_flight, stats.failed), (2, 0, 1));
}

/// The stats once they count `expected` rows in flight, which a store may
/// learn of just after its claim returns (a locked claim's record is
/// written beside the publish); fails after five seconds.
async fn in_flight_soon<S: OutboxStore>(store: &S, route: &str, expected: u64) -> OutboxStats {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let stats = store.stats(route).await.unwrap();
        if stats.in_flight == expected || tokio::time::Instant::now() > deadline {
            return stats;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Purge deletes finished rows older than the window, at most `limit` per
/// call, and never touches pending rows.
pub async fn purge_deletes_finished_rows_in_batches<H: StoreHarness>(h: &H) {
    let (store, route) = staged(h, 1..=5).await;
    settle_every(
        claim(&store, &route, 3).await,
        Outcome::Failed { reason: "x".into() },
    )
    .await;
    settle_every(claim(&store, &route, 1).await, Outcome::Published).await;

    // Nothing is old enough; then batches of two take the three failed rows.
    let calls = [(3600, 10, 0), (0, 2, 2), (0, 2, 1), (0, 2, 0)];
    for (older_than, limit, purged) in calls {
        let failed = PurgeRequest {
            status: PurgeStatus::Failed,
            older_than: Duration::from_secs(older_than),
            limit,
        };
        let deleted = store.purge(&route.name, failed).await.unwrap();
        assert_eq!(
            deleted, purged,
            "purging failed rows older than {older_than} s, {limit} at most"
        );
    }

    let retained = store.stats(&route.name).await.unwrap().published;
    let published = PurgeRequest {
        status: PurgeStatus::Published,
        older_than: Duration::ZERO,
        limit: 10,
    };
    assert_eq!(store.purge(&route.name, published).await.unwrap(), retained);
    let stats = store.stats(&route.name).await.unwrap();
    assert_eq!((stats.pending, stats.failed, stats.published), (1, 0, 0));
}
