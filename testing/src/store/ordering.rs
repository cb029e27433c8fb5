//! `per_key` ordering: one row per key in flight, oldest first.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tidings_core::{ClaimedBatch, OrderingMode, Outcome, Settlement};
use uuid::Uuid;

use super::StoreHarness;
use super::fixtures::{
    claim, claim_within, keyed, next_claim, numbers, route, settle_all, staged_per_key,
};

fn id_of<B: ClaimedBatch>(batch: &B, n: u32) -> Uuid {
    let at = numbers(batch)
        .iter()
        .position(|&m| m == n)
        .expect("row in batch");
    batch.records()[at].envelope.event_id
}

async fn settle<B: ClaimedBatch>(batch: B, outcomes: Vec<(Uuid, Outcome)>) {
    let settlements = outcomes
        .into_iter()
        .map(|(event_id, outcome)| Settlement { event_id, outcome })
        .collect();
    let report = batch.settle(settlements).await.expect("settle");
    assert!(report.lost.is_empty());
}

/// Checks `batch` holds row `n` alone (`why` it should) and publishes it.
async fn publish_only<B: ClaimedBatch>(batch: B, n: u32, why: &str) {
    assert_eq!(numbers(&batch), [n], "{why}");
    let id = id_of(&batch, n);
    settle(batch, vec![(id, Outcome::Published)]).await;
}

/// Only the oldest row of each key is claimed, none while its key is in
/// flight; rows without a key are never held back.
pub async fn per_key_claims_the_oldest_row_of_each_key<H: StoreHarness>(h: &H) {
    let (k1, k2) = (Some("k1"), Some("k2"));
    let (store, route) = staged_per_key(h, &[k1, k2, k1, None, k2, None, k1]).await;

    let first = claim(&store, &route, 1).await;
    assert_eq!(numbers(&first), [1]);
    let second = claim(&store, &route, 10).await;
    assert_eq!(
        numbers(&second),
        [2, 4, 6],
        "k1 waits for row 1; k2 gives only its oldest row"
    );
    assert!(claim(&store, &route, 10).await.records().is_empty());

    let one = id_of(&first, 1);
    settle(first, vec![(one, Outcome::Published)]).await;
    let third = claim(&store, &route, 10).await;
    assert_eq!(
        numbers(&third),
        [3],
        "k1 moves on; k2 waits for row 2, still in flight"
    );
    assert!(claim(&store, &route, 10).await.records().is_empty());
    drop(second);
}

/// A row waiting to be retried holds back its own key, and only that key.
pub async fn per_key_retry_holds_back_only_its_key<H: StoreHarness>(h: &H) {
    let (k1, k2) = (Some("k1"), Some("k2"));
    let (store, route) = staged_per_key(h, &[k1, k2, k1, k2]).await;

    let first = claim(&store, &route, 10).await;
    assert_eq!(numbers(&first), [1, 2]);
    let retry = Outcome::Retry {
        delay: Duration::from_millis(700),
        error: "transient".into(),
    };
    let outcomes = vec![
        (id_of(&first, 1), retry),
        (id_of(&first, 2), Outcome::Published),
    ];
    settle(first, outcomes).await;

    let second = claim(&store, &route, 10).await;
    publish_only(second, 4, "k2 moves on while k1 waits for its retry").await;

    let third = claim_within(&store, &route, 10, Duration::from_secs(5)).await;
    publish_only(
        third,
        1,
        "the retry comes before the younger row of its key",
    )
    .await;
    assert_eq!(numbers(&claim(&store, &route, 10).await), [3]);
}

/// A failed row no longer holds back its key.
pub async fn per_key_failed_row_releases_its_key<H: StoreHarness>(h: &H) {
    let (store, route) = staged_per_key(h, &[Some("k"), Some("k")]).await;

    let first = claim(&store, &route, 10).await;
    assert_eq!(numbers(&first), [1]);
    let one = id_of(&first, 1);
    settle(
        first,
        vec![(
            one,
            Outcome::Failed {
                reason: "poison".into(),
            },
        )],
    )
    .await;
    assert_eq!(numbers(&claim(&store, &route, 10).await), [2]);
}

/// Concurrent claimers never hold two rows of one key at once, and each
/// key's rows are claimed in staging order.
pub async fn per_key_concurrent_claimers_keep_key_order<H: StoreHarness>(h: &H) {
    let store = h.store().await;
    let route = route(OrderingMode::PerKey);
    let keys = ["a", "b", "c", "d", "e"];
    h.commit(
        &store,
        (0..60)
            .map(|n| keyed(&route, n, keys[n as usize % keys.len()]))
            .collect(),
    )
    .await;

    let in_flight: Arc<Mutex<HashSet<String>>> = Arc::default();
    let order: Arc<Mutex<HashMap<String, Vec<u32>>>> = Arc::default();
    let claimers = (0..4).map(|_| {
        let (store, in_flight, order) = (store.clone(), in_flight.clone(), order.clone());
        let route = route.clone();
        async move {
            let idle = (5, Duration::from_millis(20));
            while let Some(batch) = next_claim(&store, &route, 3, idle).await {
                for record in batch.records() {
                    let key = record.envelope.ordering_key.clone().unwrap();
                    assert!(
                        in_flight.lock().unwrap().insert(key.clone()),
                        "key {key} claimed twice at once"
                    );
                    let n = std::str::from_utf8(&record.envelope.payload)
                        .unwrap()
                        .parse()
                        .unwrap();
                    order.lock().unwrap().entry(key).or_default().push(n);
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
                for record in batch.records() {
                    in_flight
                        .lock()
                        .unwrap()
                        .remove(record.envelope.ordering_key.as_deref().unwrap());
                }
                let done = settle_all(&batch, Outcome::Published);
                batch.settle(done).await.expect("settle");
            }
        }
    });
    futures::future::join_all(claimers).await;

    let order = order.lock().unwrap();
    for (i, key) in keys.iter().enumerate() {
        let expected: Vec<u32> = (0..60).filter(|n| *n as usize % keys.len() == i).collect();
        assert_eq!(order[*key], expected, "key {key} out of order");
    }
}
