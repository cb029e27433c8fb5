//! Claiming: order, limits, isolation, visibility.

use std::collections::HashSet;
use std::time::{Duration, SystemTime};

use tidings_core::staging::Delay;
use tidings_core::{
    ClaimCursor, ClaimedBatch, Hlc, OrderingMode, OutboxStore, Outcome, Route, Settlement,
};

use super::StoreHarness;
use super::fixtures::{
    claim, claim_after, claim_within, event, full_event, numbers, route, settle_all, staged,
};

/// Rows come back oldest first, with every envelope field as staged and
/// the attempt counted.
pub async fn claim_returns_rows_oldest_first_with_every_field<H: StoreHarness>(h: &H) {
    let store = h.store().await;
    let route = route(OrderingMode::Unordered);
    let full = full_event(&route);
    let mut staged = vec![full.clone()];
    staged.extend((2..=5).map(|n| event(&route, n)));
    h.commit(&store, staged).await;

    let batch = claim(&store, &route, 10).await;
    assert_eq!(numbers(&batch), [1, 2, 3, 4, 5]);
    let record = &batch.records()[0];
    let mut expected = full.envelope;
    expected.attempts = 1;
    assert_eq!(record.envelope, expected);
    assert_eq!((record.attempts_started, record.attempts_finished), (1, 0));
    assert_eq!(record.last_error, None);
}

/// The rows taken out of a batch are the rows it claimed, in order; the
/// batch is left without them and still settles them.
pub async fn taken_rows_are_the_claimed_ones_and_still_settle<H: StoreHarness>(h: &H) {
    let (store, route) = staged(h, 1..=3).await;

    let mut batch = claim(&store, &route, 10).await;
    let claimed = batch.records().to_vec();
    let taken = batch.take_records();
    assert_eq!(taken, claimed);
    assert!(batch.records().is_empty(), "the rows were moved out");
    let settlements = taken
        .iter()
        .map(|r| Settlement {
            event_id: r.envelope.event_id,
            outcome: Outcome::Published,
        })
        .collect();
    assert_eq!(batch.settle(settlements).await.unwrap().published, 3);
    assert!(claim(&store, &route, 10).await.records().is_empty());
}

/// A claim takes at most `limit` rows, and a claimed row is not claimed
/// again while its lease holds.
pub async fn claim_respects_limit_and_skips_claimed_rows<H: StoreHarness>(h: &H) {
    let (store, route) = staged(h, 1..=5).await;

    let first = claim(&store, &route, 2).await;
    assert_eq!(numbers(&first), [1, 2]);
    let second = claim(&store, &route, 10).await;
    assert_eq!(numbers(&second), [3, 4, 5]);
    assert!(claim(&store, &route, 10).await.records().is_empty());
    assert_ne!(first.lease(), second.lease());
}

/// A claim past a batch's cursor takes only rows after that batch's, and
/// a row left behind the cursor, due again after a retry, is taken by the
/// next claim without one. A store that returns no cursor is handed one
/// all the same and claims from the oldest row.
pub async fn a_claim_past_a_cursor_leaves_earlier_rows_to_one_without<H: StoreHarness>(h: &H) {
    let (store, route) = staged(h, 1..=6).await;

    let first = claim(&store, &route, 2).await;
    assert_eq!(numbers(&first), [1, 2]);
    let cursor = first.cursor();
    let next = claim_after(&store, &route, 2, cursor.or(Some(ClaimCursor(i64::MAX)))).await;
    assert_eq!(numbers(&next), [3, 4]);
    match cursor {
        Some(_) => assert!(next.cursor() > cursor, "a cursor moves on with the claims"),
        None => assert_eq!(next.cursor(), None, "a store without cursors returns none"),
    }
    let mut settlements = settle_all(&first, Outcome::Published);
    settlements[0].outcome = Outcome::Retry {
        delay: Duration::ZERO,
        error: "try again".into(),
    };
    first.settle(settlements).await.expect("settle");

    let past = claim_after(&store, &route, 10, next.cursor()).await;
    match cursor {
        Some(_) => {
            assert_eq!(numbers(&past), [5, 6]);
            let behind = claim(&store, &route, 10).await;
            assert_eq!(numbers(&behind), [1], "left behind the cursor");
        }
        None => assert_eq!(numbers(&past), [1, 5, 6]),
    }
}

/// Rows of one route are never claimed through another.
pub async fn routes_are_isolated<H: StoreHarness>(h: &H) {
    let store = h.store().await;
    let (a, b) = (
        route(OrderingMode::Unordered),
        route(OrderingMode::Unordered),
    );
    h.commit(&store, vec![event(&a, 1), event(&b, 2), event(&a, 3)])
        .await;

    assert_eq!(numbers(&claim(&store, &b, 10).await), [2]);
    assert_eq!(numbers(&claim(&store, &a, 10).await), [1, 3]);
}

/// A row staged with a delay is invisible until the delay has passed.
pub async fn delayed_rows_wait<H: StoreHarness>(h: &H) {
    let store = h.store().await;
    let route = route(OrderingMode::Unordered);
    let mut delayed = event(&route, 1);
    delayed.delay = Some(Duration::from_millis(600).into());
    h.commit(&store, vec![delayed, event(&route, 2)]).await;
    claimable_now_then_later(&store, &route, &[2], &[1]).await;
}

/// A row staged not before a time is invisible until then; one whose
/// time has passed is claimed at once.
pub async fn rows_not_before_a_time_wait<H: StoreHarness>(h: &H) {
    let store = h.store().await;
    let route = route(OrderingMode::Unordered);
    let mut later = event(&route, 1);
    later.delay = Some(Delay::Until(SystemTime::now() + Duration::from_millis(800)));
    let mut past = event(&route, 2);
    past.delay = Some(Delay::Until(SystemTime::now() - Duration::from_secs(3600)));
    h.commit(&store, vec![later, past, event(&route, 3)]).await;
    claimable_now_then_later(&store, &route, &[2, 3], &[1]).await;
}

/// Asserts that the rows claimable now are `now`, publishes them, and
/// asserts that the rows claimable within 5 s after are `later`.
async fn claimable_now_then_later<S: OutboxStore>(
    store: &S,
    route: &Route,
    now: &[u32],
    later: &[u32],
) {
    let claimed = claim(store, route, 10).await;
    assert_eq!(numbers(&claimed), now);
    let published = settle_all(&claimed, Outcome::Published);
    claimed.settle(published).await.expect("settle");
    let after = claim_within(store, route, 10, Duration::from_secs(5)).await;
    assert_eq!(numbers(&after), later);
}

/// With hybrid-clock ordering, rows are claimed in clock order rather than
/// staging order.
pub async fn hlc_ordering_claims_in_clock_order<H: StoreHarness>(h: &H) {
    let store = h.store().await;
    let mut route = route(OrderingMode::Unordered);
    route.hlc_ordering = true;
    let staged = [(1, 30), (2, 10), (3, 20)].map(|(n, stamp)| {
        let mut e = event(&route, n);
        e.envelope.hlc = Some(Hlc::from_u64(stamp << 16));
        e
    });
    h.commit(&store, staged.to_vec()).await;

    assert_eq!(numbers(&claim(&store, &route, 10).await), [2, 3, 1]);
}

/// Concurrent claimers split the rows: none is claimed twice, none is
/// missed.
pub async fn concurrent_claims_never_overlap<H: StoreHarness>(h: &H) {
    let (store, route) = staged(h, 0..200).await;

    let claimers = (0..4).map(|_| {
        let (store, route) = (store.clone(), route.clone());
        async move {
            let mut mine = Vec::new();
            loop {
                let batch = claim(&store, &route, 7).await;
                if batch.records().is_empty() {
                    return mine;
                }
                mine.extend(numbers(&batch));
                let done = settle_all(&batch, Outcome::Published);
                let report = batch.settle(done).await.expect("settle");
                assert!(report.lost.is_empty());
            }
        }
    });
    let all: Vec<u32> = futures::future::join_all(claimers)
        .await
        .into_iter()
        .flatten()
        .collect();
    let distinct: HashSet<u32> = all.iter().copied().collect();
    assert_eq!(all.len(), 200, "a row was claimed twice");
    assert_eq!(distinct, (0..200).collect());
}
