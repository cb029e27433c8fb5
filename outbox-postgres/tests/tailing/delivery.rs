use std::time::{Duration, Instant};

use tidings_core::OutboxSpec;
use tidings_postgres::{PgOutboxStore, Retention, TailMode};
use tidings_testing::eventually::eventually;

use crate::setup::Tailed;
use crate::support::{KEYED_EVENTS, ORDER_EVENTS, row_count, stage_to};

/// Stages `count` numbered events of `spec` in transactions of `per_tx`.
async fn stage_numbered(store: &PgOutboxStore, spec: &OutboxSpec<u64>, count: u64, per_tx: u64) {
    let mut n = 0;
    while n < count {
        let mut ctx = store.begin().await.unwrap();
        for _ in 0..per_tx.min(count - n) {
            ctx.outbox().stage(spec, "test.event", &n).unwrap();
            n += 1;
        }
        ctx.commit().await.unwrap();
    }
}

async fn each_event_once_in_commit_order(mode: TailMode) {
    let mut t = Tailed::new(mode, Retention::Delete).await;
    t.relay(&ORDER_EVENTS);
    stage_numbered(&t.store, &ORDER_EVENTS, 500, 7).await;
    let seen = t.published(500).await;
    assert_eq!(
        seen,
        (0..500).collect::<Vec<_>>(),
        "each event once, in commit order"
    );
    // Published rows are removed in table mode; message mode never wrote any.
    let rows = eventually(Duration::from_secs(10), || row_count(&t.store), |n| *n == 0).await;
    assert_eq!(rows, 0);
    // The position is recorded and confirmed to the slot.
    let state = eventually(
        Duration::from_secs(10),
        || async { t.store.slot_state().await.unwrap().unwrap() },
        |s| s.confirmed > 0 && s.lag_bytes() < 1 << 20,
    )
    .await;
    assert!(state.active, "the relay holds the slot: {state:?}");
    t.finish().await;
}

in_both_modes!(
    each_event_once_in_commit_order:
    messages message_mode_publishes_each_event_once_in_commit_order,
    table table_mode_publishes_each_event_once_in_commit_order
);

#[tokio::test]
async fn table_mode_keeps_published_rows_when_asked() {
    let mut t = Tailed::new(TailMode::Table, Retention::Keep).await;
    t.relay(&ORDER_EVENTS);
    stage_to(&t.store, &ORDER_EVENTS, 20).await;
    let stats = t.stats_when("order-events", |s| s.published == 20).await;
    assert_eq!((stats.published, stats.pending), (20, 0));
    t.finish().await;
}

#[tokio::test]
async fn interleaved_transactions_publish_in_commit_order() {
    let mut t = Tailed::new(TailMode::Messages, Retention::Delete).await;
    t.relay(&ORDER_EVENTS);
    // The route is recorded first: a transaction recording it would hold
    // back every other staging it until it commits.
    stage_to(&t.store, &ORDER_EVENTS, 1).await;
    // The first transaction begins first and stages first, but commits last.
    let mut long = t.store.begin().await.unwrap();
    long.outbox()
        .stage(&ORDER_EVENTS, "test.event", &1)
        .unwrap();
    long.flush().await.unwrap();
    let mut short = t.store.begin().await.unwrap();
    short
        .outbox()
        .stage(&ORDER_EVENTS, "test.event", &2)
        .unwrap();
    short.commit().await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    long.outbox()
        .stage(&ORDER_EVENTS, "test.event", &3)
        .unwrap();
    long.commit().await.unwrap();
    assert_eq!(
        t.published(4).await,
        [0, 2, 1, 3],
        "commit order, not staging order"
    );
    t.finish().await;
}

#[tokio::test]
async fn a_retry_holds_back_only_its_own_key() {
    let mut t = Tailed::new(TailMode::Messages, Retention::Delete).await;
    let mut ctx = t.store.begin().await.unwrap();
    for (n, key) in [(0u64, "a"), (1, "b"), (2, "a"), (3, "b"), (4, "a")] {
        let staged = ctx.outbox().stage(&KEYED_EVENTS, "test.event", &n).unwrap();
        let id = staged.ordering_key(key).envelope().event_id;
        if n == 0 {
            t.recorder.fail_once(id);
        }
    }
    ctx.commit().await.unwrap();
    t.relay(&KEYED_EVENTS);
    let seen = t.published(5).await;
    let of_a: Vec<u64> = seen.iter().copied().filter(|n| n % 2 == 0).collect();
    assert_eq!(
        of_a,
        [0, 2, 4],
        "key a waits for its retried event: {seen:?}"
    );
    let first_b = seen.iter().position(|n| *n == 1).unwrap();
    let first_a = seen.iter().position(|n| *n == 0).unwrap();
    assert!(first_b < first_a, "key b went on meanwhile: {seen:?}");
    t.finish().await;
}

#[tokio::test]
async fn a_one_megabyte_event_goes_through_message_mode() {
    static BIG: OutboxSpec<String> = OutboxSpec::json("order-events").destination("orders");
    let mut t = Tailed::new(TailMode::Messages, Retention::Delete).await;
    t.relay(&ORDER_EVENTS);
    let payload = "x".repeat(1 << 20);
    let mut ctx = t.store.begin().await.unwrap();
    ctx.outbox().stage(&BIG, "test.big", &payload).unwrap();
    ctx.commit().await.unwrap();
    let recorder = &t.recorder;
    let seen = eventually(
        Duration::from_secs(20),
        || async { recorder.accepted() },
        |a| !a.is_empty(),
    )
    .await;
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].payload.len(),
        (1 << 20) + 2,
        "the JSON string, quotes included"
    );
    t.finish().await;
}

async fn a_delayed_event_waits(mode: TailMode) {
    let mut t = Tailed::new(mode, Retention::Delete).await;
    t.relay(&ORDER_EVENTS);
    // The delay counts from staging, so from before the transaction: a
    // commit slow under load shortens the wait seen after it.
    let staging = Instant::now();
    let mut ctx = t.store.begin().await.unwrap();
    let delayed = ctx.outbox().stage(&ORDER_EVENTS, "test.event", &1).unwrap();
    delayed.delay(Duration::from_millis(1500));
    ctx.outbox().stage(&ORDER_EVENTS, "test.event", &2).unwrap();
    ctx.commit().await.unwrap();
    assert_eq!(t.published(1).await, [2], "the delayed event waits");
    assert_eq!(t.published(2).await, [2, 1]);
    assert!(
        staging.elapsed() >= Duration::from_millis(1450),
        "{:?}",
        staging.elapsed()
    );
    t.finish().await;
}

async fn an_event_not_before_a_time_waits(mode: TailMode) {
    let mut t = Tailed::new(mode, Retention::Delete).await;
    t.relay(&ORDER_EVENTS);
    let at = std::time::SystemTime::now() + Duration::from_millis(1500);
    let mut ctx = t.store.begin().await.unwrap();
    let later = ctx.outbox().stage(&ORDER_EVENTS, "test.event", &1).unwrap();
    later.not_before(at);
    let past = ctx.outbox().stage(&ORDER_EVENTS, "test.event", &2).unwrap();
    past.not_before(at - Duration::from_secs(3600));
    ctx.commit().await.unwrap();
    assert_eq!(t.published(1).await, [2], "the event waits for its time");
    assert_eq!(t.published(2).await, [2, 1]);
    assert!(
        std::time::SystemTime::now() >= at - Duration::from_millis(100),
        "relayed before its time"
    );
    t.finish().await;
}

in_both_modes!(
    an_event_not_before_a_time_waits:
    messages message_mode_holds_an_event_until_its_time,
    table table_mode_holds_an_event_until_its_time
);

in_both_modes!(
    a_delayed_event_waits:
    messages message_mode_holds_a_delayed_event_until_due,
    table table_mode_holds_a_delayed_event_until_due
);
