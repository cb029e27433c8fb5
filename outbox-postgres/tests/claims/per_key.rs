//! Per-key claims beyond the conformance suite: hybrid-clock order within
//! a key, a requeued row that must wait for its key's row in flight, every
//! busy key served in turn, and the places that bound how many locked
//! claims run at once, each passing over the keys the others hold.

use crate::support;

use std::time::Duration;

use support::{commit, drop_schema, pool, store, store_on_options, store_with};
use tidings_core::{
    ClaimRequest, ClaimedBatch, Envelope, Hlc, OrderingMode, OutboxStore, Outcome, Requeue,
    RetryPolicy, Route, Settlement, StagedEvent,
};
use tidings_postgres::{ClaimMode, PgBatch, PgOutboxOptions, PgOutboxStore, Retention};
use tidings_testing::store::numbers;

fn route(hlc_ordering: bool) -> Route {
    Route {
        name: "keyed".into(),
        destination: Some("orders".into()),
        ordering: OrderingMode::PerKey,
        retry: RetryPolicy::new(),
        hlc_ordering,
    }
}

fn event(route: &Route, n: u32, key: &str, hlc: Option<u64>) -> StagedEvent {
    let mut envelope = Envelope::new(
        route.name.as_ref(),
        "orders",
        "test.event",
        n.to_string().into(),
        "application/json",
    );
    envelope.ordering_key = Some(key.to_owned());
    envelope.hlc = hlc.map(|stamp| Hlc::from_u64(stamp << 16));
    StagedEvent {
        envelope,
        delay: None,
    }
}

async fn claim(store: &PgOutboxStore, route: &Route) -> PgBatch {
    claim_up_to(store, route, 10).await
}

async fn claim_up_to(store: &PgOutboxStore, route: &Route, limit: usize) -> PgBatch {
    let request = ClaimRequest {
        route,
        limit,
        lease: Duration::from_secs(60),
        after: None,
    };
    store.claim(request).await.unwrap()
}

async fn settle(batch: PgBatch, outcome: Outcome) {
    let settlements = batch
        .records()
        .iter()
        .map(|r| Settlement {
            event_id: r.envelope.event_id,
            outcome: outcome.clone(),
        })
        .collect();
    let report = batch.settle(settlements).await.unwrap();
    assert!(report.lost.is_empty());
}

#[tokio::test]
async fn with_hybrid_clock_ordering_the_oldest_stamp_of_a_key_goes_first() {
    let store = store(Retention::Delete).await;
    let route = route(true);
    let staged = vec![
        event(&route, 1, "k", Some(30)),
        event(&route, 2, "k", Some(10)),
        event(&route, 3, "j", Some(20)),
        event(&route, 4, "j", Some(40)),
    ];
    commit(&store, staged).await;

    let first = claim(&store, &route).await;
    assert_eq!(numbers(&first), [2, 3]);
    assert!(claim(&store, &route).await.records().is_empty());
    settle(first, Outcome::Published).await;
    assert_eq!(numbers(&claim(&store, &route).await), [1, 4]);
    drop_schema(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requeued_row_waits_while_its_key_has_a_leased_row_in_flight() {
    requeued_row_waits_for_its_key(ClaimMode::Leased).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requeued_row_waits_while_its_key_has_a_locked_row_in_flight() {
    requeued_row_waits_for_its_key(ClaimMode::Locked).await;
}

/// Row 1 of a key fails, row 2 is claimed, and row 1 is requeued while row
/// 2 is in flight: row 1 must not be claimed before row 2 settles. A
/// leased row in flight holds its key back from claims; a locked one holds
/// back the requeue itself, which waits for the claim to settle.
async fn requeued_row_waits_for_its_key(mode: ClaimMode) {
    let store = store_with(Retention::Delete, mode).await;
    let route = route(false);
    commit(
        &store,
        vec![event(&route, 1, "k", None), event(&route, 2, "k", None)],
    )
    .await;

    let first = claim(&store, &route).await;
    settle(
        first,
        Outcome::Failed {
            reason: "poison".into(),
        },
    )
    .await;
    let second = claim(&store, &route).await;
    assert_eq!(numbers(&second), [2]);

    let (requeuer, name) = (store.clone(), route.name.clone());
    let requeue =
        tokio::spawn(async move { requeuer.requeue_failed(&name, Requeue::All).await.unwrap() });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        claim(&store, &route).await.records().is_empty(),
        "row 1 is the oldest again, but row 2 of its key is in flight"
    );
    settle(second, Outcome::Published).await;
    assert_eq!(requeue.await.unwrap(), 1);
    let third = claim(&store, &route).await;
    assert_eq!(numbers(&third), [1]);
    assert_eq!(
        third.records()[0].attempts_started,
        1,
        "requeue resets the attempts"
    );
    drop(third);
    drop_schema(&store).await;
}

/// Keys `a` and `b` hold six rows each, staged before one row of each of
/// `c` to `h`: claims of two, each settled before the next, serve every
/// key once before either busy key a second time, then go round again;
/// locked and leased claims alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_busy_key_gets_its_turn() {
    for mode in [ClaimMode::Locked, ClaimMode::Leased] {
        busy_keys_take_turns(mode).await;
    }
}

async fn busy_keys_take_turns(mode: ClaimMode) {
    let store = store_with(Retention::Delete, mode).await;
    let route = route(false);
    let busy = (0..12).map(|n| event(&route, n, ["a", "b"][n as usize % 2], None));
    let quiet = ["c", "d", "e", "f", "g", "h"].into_iter().zip(12..);
    let quiet = quiet.map(|(key, n)| event(&route, n, key, None));
    commit(&store, busy.chain(quiet).collect()).await;

    let mut keys = Vec::new();
    for _ in 0..5 {
        let batch = claim_up_to(&store, &route, 2).await;
        assert_eq!(batch.records().len(), 2);
        let claimed = batch.records().iter();
        keys.extend(claimed.map(|r| r.envelope.ordering_key.clone().unwrap()));
        settle(batch, Outcome::Published).await;
    }
    let expected = ["a", "b", "c", "d", "e", "f", "g", "h", "a", "b"];
    assert_eq!(keys, expected, "{mode:?}: each key once, then round again");
    drop_schema(&store).await;
}

/// Two locked claims of a per-key route hold the two places of a store
/// allowed two, the second passing over the key the first holds: a third
/// takes nothing, though a key is free, until one of them settles. A
/// store allowed one place (the default) takes nothing beside a claim
/// holding it, and takes the place as soon as that claim ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locked_claims_of_a_per_key_route_wait_for_a_place() {
    let options = PgOutboxOptions::new().per_key_claims(2);
    let store = store_on_options(pool(8).await, options).await;
    let route = route(false);
    let keys = ["a", "b", "c", "d"];
    let staged = (0..12).map(|n| event(&route, n, keys[n as usize % 4], None));
    commit(&store, staged.collect()).await;

    let first = claim_up_to(&store, &route, 1).await;
    assert_eq!(numbers(&first), [0]);
    // Another relay's store, whose walk starts at the first key.
    let other = PgOutboxStore::new(pool(4).await, store.options().clone()).unwrap();
    let second = claim_up_to(&other, &route, 2).await;
    assert_eq!(numbers(&second), [1, 2], "a is held; its row 4 waits");
    assert!(
        claim(&store, &route).await.records().is_empty(),
        "both places are held"
    );
    settle(first, Outcome::Published).await;
    let third = claim(&store, &route).await;
    assert_eq!(numbers(&third), [3, 4], "b and c are held");
    settle(third, Outcome::Published).await;
    settle(second, Outcome::Published).await;

    let options = PgOutboxOptions::new().schema(store.options().get_schema());
    let one = PgOutboxStore::new(pool(4).await, options).unwrap();
    let holding = claim_up_to(&one, &route, 1).await;
    assert_eq!(numbers(&holding), [8], "a, b, c and d are at 8, 5, 6 and 7");
    let started = std::time::Instant::now();
    assert!(
        claim(&one, &route).await.records().is_empty(),
        "the one place is held"
    );
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(900),
        "gave up after {waited:?}"
    );
    let (waiter, route_again) = (one.clone(), route.clone());
    let standing_by = tokio::spawn(async move { claim(&waiter, &route_again).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = std::time::Instant::now();
    settle(holding, Outcome::Published).await;
    let taken_over = standing_by.await.unwrap();
    assert!(started.elapsed() < Duration::from_millis(500));
    assert_eq!(numbers(&taken_over), [5, 6, 7]);
    settle(taken_over, Outcome::Published).await;
    drop_schema(&store).await;
}
