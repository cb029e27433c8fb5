//! The relay engine against the in-memory store, a manual clock and a
//! scripted publisher.

use std::sync::Arc;
use std::time::Duration;

use crate::support::{Answer, Gate, Scripted};
use tidings_core::memory::{MemoryBroker, MemoryStore, MemoryStoreOptions};
use tidings_core::relay::{Relay, RelayOptions};
use tidings_core::{
    Backoff, ClaimRequest, ClaimedBatch, ManualClock, OutboxSpec, OutboxStore, Requeue, RetryPolicy,
};
use tokio_util::sync::CancellationToken;

const RETRY: RetryPolicy = RetryPolicy::new().max_attempts(5).backoff(Backoff::new(
    Duration::from_secs(1),
    Duration::from_secs(60),
));
static EVENTS: OutboxSpec<u32> = OutboxSpec::json("events")
    .destination("events-q")
    .retry(RETRY);

fn store() -> (ManualClock, MemoryStore) {
    let clock = ManualClock::starting_now();
    (
        clock.clone(),
        MemoryStore::with_options(MemoryStoreOptions::new().clock(Arc::new(clock))),
    )
}

fn stage(store: &MemoryStore, count: u32) {
    let mut ctx = store.begin();
    for n in 0..count {
        ctx.outbox().stage(&EVENTS, "test.event", &n).unwrap();
    }
    ctx.commit().unwrap();
}

/// The failed row's last error starts with `reason`; the row is
/// requeued to read it.
async fn assert_failed_for(store: &MemoryStore, reason: &str) {
    store.requeue_failed("events", Requeue::All).await.unwrap();
    let request = ClaimRequest {
        route: EVENTS.route(),
        limit: 1,
        lease: Duration::from_secs(60),
        after: None,
    };
    let batch = store.claim(request).await.unwrap();
    let last_error = batch.records()[0].last_error.clone().unwrap();
    assert!(last_error.starts_with(reason), "{last_error}");
}

#[tokio::test]
async fn transient_failures_reschedule_with_growing_delay() {
    let (clock, store) = store();
    stage(&store, 1);
    let relay = Relay::new(store.clone(), Scripted::always(Answer::Transient), &EVENTS).unwrap();
    let backoff = RETRY.get_backoff();

    for attempt in 1..=4 {
        let report = relay.run_pass().await.unwrap();
        assert_eq!(
            (report.claimed, report.rescheduled),
            (1, 1),
            "attempt {attempt}"
        );
        let ceiling = backoff.ceiling(attempt);
        clock.advance(ceiling / 2 - Duration::from_millis(1));
        assert_eq!(
            relay.run_pass().await.unwrap().claimed,
            0,
            "visible before the backoff, attempt {attempt}"
        );
        clock.advance(ceiling / 2 + Duration::from_millis(1));
    }
    let report = relay.run_pass().await.unwrap();
    assert_eq!(
        report.claimed, 1,
        "visible again once the fourth backoff has passed"
    );
}

#[tokio::test]
async fn poison_fails_at_once_with_the_reason() {
    let (_, store) = store();
    stage(&store, 1);
    let publisher = Scripted::always(Answer::Unroutable);
    let relay = Relay::new(store.clone(), publisher.clone(), &EVENTS).unwrap();

    let report = relay.run_pass().await.unwrap();
    assert_eq!(
        (report.claimed, report.failed, report.rescheduled),
        (1, 1, 0)
    );
    assert_eq!(publisher.get_ref().calls(), 1);
    assert_eq!(store.stats("events").await.unwrap().failed, 1);
    assert_failed_for(&store, "poison: destination \"events-q\"").await;
}

#[tokio::test]
async fn max_attempts_fail_the_row() {
    let (clock, store) = store();
    stage(&store, 1);
    let relay = Relay::new(store.clone(), Scripted::always(Answer::Transient), &EVENTS).unwrap();

    for _ in 1..RETRY.get_max_attempts() {
        assert_eq!(relay.run_pass().await.unwrap().rescheduled, 1);
        clock.advance(RETRY.get_backoff().get_max());
    }
    let last = relay.run_pass().await.unwrap();
    assert_eq!((last.rescheduled, last.failed), (0, 1));
    assert_failed_for(&store, "gave up after 5 attempts: broker unavailable").await;
}

#[tokio::test]
async fn a_lost_lease_is_skipped_without_error() {
    let (clock, store) = store();
    stage(&store, 1);
    let gate = Arc::new(Gate::default());
    let config = RelayOptions::default().lease(Duration::from_secs(5));
    let slow = Relay::new(store.clone(), Scripted::gated(gate.clone()), &EVENTS)
        .unwrap()
        .options(config);
    let pass = tokio::spawn(async move { slow.run_pass().await });
    gate.entered.notified().await;

    clock.advance(Duration::from_secs(6));
    assert_eq!(store.sweep_expired("events", 10).await.unwrap(), 1);
    let fast = Relay::new(store.clone(), Scripted::always(Answer::Accept), &EVENTS).unwrap();
    assert_eq!(fast.run_pass().await.unwrap().published, 1);

    gate.open.notify_one();
    let report = pass.await.unwrap().expect("a lost lease is not an error");
    assert_eq!(
        (report.claimed, report.published, report.lease_lost),
        (1, 0, 1)
    );
    assert_eq!(store.stats("events").await.unwrap(), Default::default());
}

#[tokio::test]
async fn a_crash_loop_fails_the_row_without_publishing() {
    let (clock, store) = store();
    stage(&store, 1);
    let lease = Duration::from_secs(5);
    for _ in 0..2 {
        let request = ClaimRequest {
            route: EVENTS.route(),
            limit: 10,
            lease,
            after: None,
        };
        let batch = store.claim(request).await.unwrap();
        assert_eq!(batch.records().len(), 1);
        drop(batch);
        clock.advance(lease + Duration::from_secs(1));
        assert_eq!(store.sweep_expired("events", 10).await.unwrap(), 1);
    }
    let publisher = Scripted::always(Answer::Accept);
    let config = RelayOptions::default().max_crashes(2);
    let relay = Relay::new(store.clone(), publisher.clone(), &EVENTS)
        .unwrap()
        .options(config);

    let report = relay.run_pass().await.unwrap();
    assert_eq!((report.claimed, report.failed), (1, 1));
    assert_eq!(publisher.get_ref().calls(), 0);
    assert_failed_for(
        &store,
        "crash loop: claimed 3 times, 2 of them never finished",
    )
    .await;
}

#[tokio::test]
async fn a_backlog_drains_without_sleeping_between_full_batches() {
    let store = MemoryStore::new();
    stage(&store, 10_000);
    let broker = MemoryBroker::new();
    broker.declare_queue("events-q");
    let config = RelayOptions::default()
        .batch_size(100)
        .poll_interval(Duration::from_secs(3600));
    let relay = Relay::new(store.clone(), broker.clone(), &EVENTS)
        .unwrap()
        .options(config);

    let cancel = CancellationToken::new();
    let running = tokio::spawn({
        let cancel = cancel.clone();
        async move { relay.run(cancel).await }
    });
    let drained = tokio::time::timeout(Duration::from_secs(20), async {
        while broker.depth("events-q") < 10_000 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    cancel.cancel();
    running.await.unwrap().unwrap();
    assert!(
        drained.is_ok(),
        "only {} of 10000 published: the relay slept between full batches",
        broker.depth("events-q")
    );
    assert_eq!(store.pending_count("events"), 0);
}

#[tokio::test]
async fn a_commit_wakes_an_idle_relay() {
    let store = MemoryStore::new();
    let broker = MemoryBroker::new();
    broker.declare_queue("events-q");
    let config = RelayOptions::default().poll_interval(Duration::from_secs(3600));
    let relay = Relay::new(store.clone(), broker.clone(), &EVENTS)
        .unwrap()
        .options(config)
        .wakeup(store.wakeup());
    let cancel = CancellationToken::new();
    let running = tokio::spawn({
        let cancel = cancel.clone();
        async move { relay.run(cancel).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;

    stage(&store, 1);
    let woke = tokio::time::timeout(Duration::from_millis(500), async {
        while broker.depth("events-q") == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    cancel.cancel();
    running.await.unwrap().unwrap();
    assert!(woke.is_ok(), "the relay slept through the wake-up");
}

#[tokio::test]
async fn a_spec_without_destination_is_refused() {
    static NOWHERE: OutboxSpec<u32> = OutboxSpec::json("nowhere");
    let err = Relay::new(MemoryStore::new(), MemoryBroker::new(), &NOWHERE).unwrap_err();
    assert_eq!(
        err.to_string(),
        "route \"nowhere\" has no destination; call OutboxSpec::destination(..)"
    );
}

#[tokio::test]
async fn a_per_key_backlog_drains_completely() {
    static KEYED: OutboxSpec<u32> = OutboxSpec::json("keyed").destination("keyed-q").per_key();
    let store = MemoryStore::new();
    let mut ctx = store.begin();
    for n in 0..50u32 {
        ctx.outbox()
            .stage(&KEYED, "t", &n)
            .unwrap()
            .ordering_key(format!("k{}", n % 5));
    }
    ctx.commit().unwrap();
    let broker = MemoryBroker::new();
    broker.declare_queue("keyed-q");

    let report = Relay::new(store.clone(), broker.clone(), &KEYED)
        .unwrap()
        .drain()
        .await
        .unwrap();
    assert_eq!(
        report.published, 50,
        "drain stopped with keys still holding rows"
    );
    assert_eq!(broker.depth("keyed-q"), 50);
}

#[tokio::test]
async fn claims_are_one_window_wide_at_start_and_after_a_crash() {
    let (clock, store) = store();
    stage(&store, 600);
    // A relay died holding the first row.
    let lease = Duration::from_secs(5);
    let request = ClaimRequest {
        route: EVENTS.route(),
        limit: 1,
        lease,
        after: None,
    };
    drop(store.claim(request).await.unwrap());
    clock.advance(lease + Duration::from_secs(1));
    assert_eq!(store.sweep_expired("events", 10).await.unwrap(), 1);
    let config = RelayOptions::default().batch_size(250).publish_window(50);
    let relay = Relay::new(store.clone(), Scripted::always(Answer::Accept), &EVENTS)
        .unwrap()
        .options(config);

    let mut claims = Vec::new();
    for _ in 0..4 {
        claims.push(relay.run_pass().await.unwrap().claimed);
    }
    // Narrow at start, and again after the claim holding the crashed row;
    // wide once a claim held no crashed row.
    assert_eq!(claims, [50, 50, 250, 250]);
}
