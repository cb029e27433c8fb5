//! Settling: published, rescheduled, failed, fenced on the lease.

use std::time::Duration;

use tidings_core::{ClaimedBatch, OrderingMode, OutboxStore, Outcome};

use super::StoreHarness;
use super::fixtures::{
    SHORT_LEASE, claim, claim_leased, claim_within, event, event_ids, numbers, route, settle_all,
    settle_each, staged,
};
use crate::eventually::eventually;

/// A published row is never claimed again.
pub async fn published_rows_are_final<H: StoreHarness>(h: &H) {
    let (store, route) = staged(h, 1..=2).await;

    let batch = claim(&store, &route, 10).await;
    let settlements = settle_all(&batch, Outcome::Published);
    let report = batch.settle(settlements).await.unwrap();
    assert_eq!((report.published, report.lost.len()), (2, 0));
    assert!(claim(&store, &route, 10).await.records().is_empty());
    let stats = store.stats(&route.name).await.unwrap();
    assert_eq!((stats.pending, stats.in_flight, stats.failed), (0, 0, 0));
}

/// After a sweep and a new claim, the old owner's mark is refused as a
/// lost lease and changes nothing; the new owner's mark wins.
pub async fn stale_lease_marks_are_refused<H: StoreHarness>(h: &H) {
    let (store, route) = staged(h, [1]).await;

    let old = claim_leased(&store, &route, 10, SHORT_LEASE).await;
    tokio::time::sleep(SHORT_LEASE + Duration::from_millis(200)).await;
    assert_eq!(store.sweep_expired(&route.name, 100).await.unwrap(), 1);
    let new = claim(&store, &route, 10).await;
    assert_eq!(numbers(&new), [1]);

    let late = settle_all(
        &old,
        Outcome::Failed {
            reason: "late".into(),
        },
    );
    let report = old.settle(late).await.unwrap();
    assert_eq!(report.lost, vec![new.records()[0].envelope.event_id]);
    assert_eq!((report.published, report.failed), (0, 0));
    assert_eq!(store.stats(&route.name).await.unwrap().in_flight, 1);

    let settlements = settle_all(&new, Outcome::Published);
    let report = new.settle(settlements).await.unwrap();
    assert_eq!((report.published, report.lost.len()), (1, 0));
}

/// A relay that publishes after its lease expired and the row was claimed
/// again has its published mark refused: the row is neither deleted nor
/// finished under the new owner, whose own mark then wins.
pub async fn stale_published_marks_are_refused<H: StoreHarness>(h: &H) {
    let (store, route) = staged(h, 1..=2).await;

    let old = claim_leased(&store, &route, 10, SHORT_LEASE).await;
    tokio::time::sleep(SHORT_LEASE + Duration::from_millis(200)).await;
    assert_eq!(store.sweep_expired(&route.name, 100).await.unwrap(), 2);
    let new = claim(&store, &route, 10).await;
    assert_eq!(numbers(&new), [1, 2]);

    let late = settle_all(&old, Outcome::Published);
    let report = old.settle(late).await.unwrap();
    assert_eq!((report.published, report.lost.len()), (0, 2));
    assert_eq!(store.stats(&route.name).await.unwrap().in_flight, 2);

    let settlements = settle_all(&new, Outcome::Published);
    let report = new.settle(settlements).await.unwrap();
    assert_eq!((report.published, report.lost.len()), (2, 0));
    assert!(claim(&store, &route, 10).await.records().is_empty());
}

/// A rescheduled row is invisible until its delay has passed, then comes
/// back with its attempts and last error.
pub async fn rescheduled_rows_wait_for_available_at<H: StoreHarness>(h: &H) {
    let (store, route) = staged(h, [1]).await;

    let batch = claim(&store, &route, 10).await;
    let retry = Outcome::Retry {
        delay: Duration::from_millis(700),
        error: "broker down".into(),
    };
    let settlements = settle_all(&batch, retry);
    assert_eq!(batch.settle(settlements).await.unwrap().rescheduled, 1);
    assert!(claim(&store, &route, 10).await.records().is_empty());
    assert_eq!(store.stats(&route.name).await.unwrap().pending, 1);

    let again = claim_within(&store, &route, 10, Duration::from_secs(5)).await;
    let record = &again.records()[0];
    assert_eq!((record.attempts_started, record.attempts_finished), (2, 1));
    assert_eq!(record.envelope.attempts, 2);
    assert_eq!(record.last_error.as_deref(), Some("broker down"));
}

/// A failed row keeps its reason, is never claimed, and comes back fresh
/// when requeued.
pub async fn failed_rows_stay_until_requeued<H: StoreHarness>(h: &H) {
    let (store, route) = staged(h, 1..=2).await;

    let batch = claim(&store, &route, 10).await;
    let ids = event_ids(&batch);
    let settlements = settle_all(
        &batch,
        Outcome::Failed {
            reason: "poison: bad".into(),
        },
    );
    assert_eq!(batch.settle(settlements).await.unwrap().failed, 2);
    assert!(claim(&store, &route, 10).await.records().is_empty());
    assert_eq!(store.stats(&route.name).await.unwrap().failed, 2);

    let requeued = store
        .requeue_failed(&route.name, tidings_core::Requeue::Ids(vec![ids[1]]))
        .await
        .unwrap();
    assert_eq!(requeued, 1);
    let again = claim(&store, &route, 10).await;
    assert_eq!(numbers(&again), [2]);
    let record = &again.records()[0];
    assert_eq!((record.attempts_started, record.attempts_finished), (1, 0));
    assert_eq!(record.last_error.as_deref(), Some("poison: bad"));

    assert_eq!(
        store
            .requeue_failed(&route.name, tidings_core::Requeue::All)
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        store
            .requeue_failed(&route.name, tidings_core::Requeue::All)
            .await
            .unwrap(),
        0
    );
}

/// Deleting failed rows by id takes exactly the failed rows named: a
/// pending, in-flight or published row named is left alone, and a failed
/// row not named stays.
pub async fn delete_failed_takes_only_the_failed_rows_named<H: StoreHarness>(h: &H) {
    let store = h.store().await;
    let route = route(OrderingMode::Unordered);
    let events: Vec<_> = (1..=5).map(|n| event(&route, n)).collect();
    let pending = events[4].envelope.event_id;
    h.commit(&store, events).await;

    let batch = claim(&store, &route, 3).await;
    let claimed = event_ids(&batch);
    let outcomes = [
        Outcome::Failed {
            reason: "poison: one".into(),
        },
        Outcome::Failed {
            reason: "poison: two".into(),
        },
        Outcome::Published,
    ];
    let settlements = settle_each(&batch, outcomes);
    batch.settle(settlements).await.unwrap();
    let in_flight = claim(&store, &route, 1).await;
    let busy = in_flight.records()[0].envelope.event_id;
    assert_ne!(busy, pending, "claims take the oldest row first");

    let named = [claimed[0], claimed[2], busy, pending];
    assert_eq!(store.delete_failed(&route.name, &named).await.unwrap(), 1);
    assert_eq!(store.delete_failed(&route.name, &named).await.unwrap(), 0);
    assert_eq!(store.delete_failed(&route.name, &[]).await.unwrap(), 0);
    assert_eq!(
        store
            .delete_failed("another-route", &[claimed[1]])
            .await
            .unwrap(),
        0
    );
    let stats = store.stats(&route.name).await.unwrap();
    // A locked claim's row reads as pending, a leased one's as in flight.
    // (A published row is kept or deleted as the store's retention says.)
    assert_eq!((stats.pending + stats.in_flight, stats.failed), (2, 1));
    drop(in_flight);
    assert_eq!(
        store
            .delete_failed(&route.name, &claimed[1..2])
            .await
            .unwrap(),
        1
    );
    assert_eq!(store.stats(&route.name).await.unwrap().failed, 0);
}

/// One settle call applies different outcomes to different rows.
pub async fn mixed_outcomes_settle_in_one_call<H: StoreHarness>(h: &H) {
    let (store, route) = staged(h, 1..=3).await;

    let batch = claim(&store, &route, 10).await;
    let outcomes = [
        Outcome::Published,
        Outcome::Retry {
            delay: Duration::from_secs(60),
            error: "later".into(),
        },
        Outcome::Failed {
            reason: "never".into(),
        },
    ];
    let settlements = settle_each(&batch, outcomes);
    let report = batch.settle(settlements).await.unwrap();
    assert_eq!(
        (report.published, report.rescheduled, report.failed),
        (1, 1, 1)
    );
    let stats = store.stats(&route.name).await.unwrap();
    assert_eq!((stats.pending, stats.in_flight, stats.failed), (1, 0, 1));
}

/// A sweep returns only rows whose lease expired; the crash stays counted.
pub async fn sweep_returns_expired_leases_counting_the_crash<H: StoreHarness>(h: &H) {
    let (store, route) = staged(h, 1..=2).await;

    let _dead = claim_leased(&store, &route, 1, SHORT_LEASE).await;
    let _alive = claim(&store, &route, 1).await;
    assert_eq!(store.sweep_expired(&route.name, 100).await.unwrap(), 0);
    tokio::time::sleep(SHORT_LEASE + Duration::from_millis(200)).await;
    // A locked claim's record is written beside the claim, so under load
    // it may expire a little after the claim's lease.
    let sweep = || async { store.sweep_expired(&route.name, 100).await.unwrap() };
    let swept = eventually(Duration::from_secs(2), sweep, |swept| *swept > 0).await;
    assert_eq!(swept, 1);
    assert_eq!(store.sweep_expired(&route.name, 100).await.unwrap(), 0);

    let again = claim(&store, &route, 10).await;
    assert_eq!(numbers(&again), [1]);
    let record = &again.records()[0];
    assert_eq!((record.attempts_started, record.attempts_finished), (2, 0));
    assert_eq!(record.crashes(), 1);
}
