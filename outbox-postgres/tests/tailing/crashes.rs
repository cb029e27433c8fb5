use std::collections::HashSet;
use std::time::Duration;

use tidings_core::relay::RelayOptions;
use tidings_core::{FailedFilter, OutboxAdmin};
use tidings_postgres::{PgOutboxOptions, TailMode};
use tidings_testing::eventually::eventually;

use crate::setup::{Recorder, doomed_relay, drop_tailing, logical_pool, tailing_store_on};
use crate::support::ORDER_EVENTS;

/// An event whose publishing kills the relay every time: each relay dies
/// on it and the next starts where the slot stands, until the event has
/// killed `max_crashes` careful sessions and is failed as a crash loop;
/// the others are published.
async fn an_event_that_keeps_killing_the_relay_is_failed(mode: TailMode) {
    let store = tailing_store_on(logical_pool().await, mode, PgOutboxOptions::new()).await;
    let recorder = Recorder::default();
    for n in 0..10u64 {
        let mut ctx = store.begin().await.unwrap();
        let staged = ctx.outbox().stage(&ORDER_EVENTS, "test.event", &n).unwrap();
        if n == 5 {
            recorder.deadly(staged.envelope().event_id);
        }
        ctx.commit().await.unwrap();
    }
    // One event a claim, so a crash is charged to the deadly one alone.
    let options = RelayOptions::default()
        .batch_size(1)
        .max_crashes(2)
        .poll_interval(Duration::from_millis(100));
    let mut kills = 0;
    let survivor = loop {
        assert!(kills < 12, "the relay kept dying: {kills} times");
        let runtime = doomed_relay(&store, &recorder, options);
        let died = eventually(
            Duration::from_secs(15),
            || async { recorder.deaths() },
            |&d| d > kills,
        )
        .await;
        if died == kills {
            break runtime;
        }
        // Dying a moment later, as a process does, once what was settled
        // before has been recorded: only events still in flight when a
        // relay dies are charged a crash.
        tokio::time::sleep(Duration::from_millis(500)).await;
        runtime.shutdown_background();
        kills = died;
    };
    assert!(
        kills >= 3,
        "failed after {kills} deaths, before max_crashes"
    );
    // Every event is published or failed; the failed ones are the deadly
    // event and at most the one claim the relay had in flight beside it.
    let (published, failed) = eventually(
        Duration::from_secs(20),
        || async {
            let published: HashSet<u64> = recorder.numbers().into_iter().collect();
            let filter = FailedFilter::default();
            let failed = store.failed("order-events", &filter).await.unwrap();
            (published, failed)
        },
        |(published, failed)| published.len() + failed.len() >= 10,
    )
    .await;
    let numbers: HashSet<u64> = failed
        .iter()
        .map(|f| serde_json::from_slice(&f.payload).unwrap())
        .collect();
    assert!(
        numbers.contains(&5),
        "the deadly event is failed: {failed:?}"
    );
    assert!(failed.len() <= 2, "failed beside it: {numbers:?}");
    assert!(published.is_disjoint(&numbers));
    assert_eq!(
        published.len() + numbers.len(),
        10,
        "published {published:?}"
    );
    for row in &failed {
        let reason = row.last_error.clone().unwrap_or_default();
        assert!(reason.contains("crash loop"), "failed as {reason:?}");
    }
    survivor.shutdown_background();
    drop_tailing(&store).await;
}

in_both_modes!(
    an_event_that_keeps_killing_the_relay_is_failed:
    messages message_mode_fails_a_crash_loop,
    table table_mode_fails_a_crash_loop
);
