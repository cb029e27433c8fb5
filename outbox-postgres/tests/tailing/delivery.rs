use std::time::Duration;

use tidings_core::OutboxSpec;
use tidings_postgres::{Retention, TailMode};
use tidings_testing::eventually::eventually;

use crate::setup::{Recorder, drop_tailing, run_relay, tailing_store, wal_store};
use crate::support::{KEYED_EVENTS, ORDER_EVENTS, row_count, stage_to};

/// Stages `count` numbered events of `spec` in transactions of `per_tx`.
async fn stage_numbered(
    store: &tidings_postgres::PgOutboxStore,
    spec: &OutboxSpec<u64>,
    count: u64,
    per_tx: u64,
) {
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
    let store = tailing_store(mode, Retention::Delete).await;
    let wal = wal_store(&store);
    let publisher = Recorder::publisher();
    let (cancel, relay) = run_relay(&wal, &ORDER_EVENTS, publisher.clone());
    stage_numbered(&store, &ORDER_EVENTS, 500, 7).await;
    let recorder = publisher.get_ref().clone();
    let seen = eventually(
        Duration::from_secs(20),
        || async { recorder.numbers() },
        |n| n.len() >= 500,
    )
    .await;
    assert_eq!(
        seen,
        (0..500).collect::<Vec<_>>(),
        "each event once, in commit order"
    );
    // Published rows are removed in table mode; message mode never wrote any.
    let rows = eventually(Duration::from_secs(5), || row_count(&store), |n| *n == 0).await;
    assert_eq!(rows, 0);
    // The position is recorded and confirmed to the slot.
    let state = eventually(
        Duration::from_secs(10),
        || async { store.slot_state().await.unwrap().unwrap() },
        |s| s.confirmed > 0 && s.lag_bytes() < 1 << 20,
    )
    .await;
    assert!(state.active, "the relay holds the slot: {state:?}");
    cancel.cancel();
    relay.await.unwrap().unwrap();
    drop(wal);
    drop_tailing(&store).await;
}

#[tokio::test]
async fn message_mode_publishes_each_event_once_in_commit_order() {
    each_event_once_in_commit_order(TailMode::Messages).await;
}

#[tokio::test]
async fn table_mode_publishes_each_event_once_in_commit_order() {
    each_event_once_in_commit_order(TailMode::Table).await;
}

#[tokio::test]
async fn table_mode_keeps_published_rows_when_asked() {
    let store = tailing_store(TailMode::Table, Retention::Keep).await;
    let wal = wal_store(&store);
    let publisher = Recorder::publisher();
    let (cancel, relay) = run_relay(&wal, &ORDER_EVENTS, publisher.clone());
    stage_to(&store, &ORDER_EVENTS, 20).await;
    let stats = eventually(
        Duration::from_secs(20),
        || async {
            tidings_core::OutboxStore::stats(&store, "order-events")
                .await
                .unwrap()
        },
        |s| s.published == 20,
    )
    .await;
    assert_eq!((stats.published, stats.pending), (20, 0));
    cancel.cancel();
    relay.await.unwrap().unwrap();
    drop(wal);
    drop_tailing(&store).await;
}

#[tokio::test]
async fn interleaved_transactions_publish_in_commit_order() {
    let store = tailing_store(TailMode::Messages, Retention::Delete).await;
    let wal = wal_store(&store);
    let publisher = Recorder::publisher();
    let (cancel, relay) = run_relay(&wal, &ORDER_EVENTS, publisher.clone());
    // The route is recorded first: a transaction recording it would hold
    // back every other staging it until it commits.
    stage_to(&store, &ORDER_EVENTS, 1).await;
    // The first transaction begins first and stages first, but commits last.
    let mut long = store.begin().await.unwrap();
    long.outbox()
        .stage(&ORDER_EVENTS, "test.event", &1)
        .unwrap();
    long.flush().await.unwrap();
    let mut short = store.begin().await.unwrap();
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
    let recorder = publisher.get_ref().clone();
    let seen = eventually(
        Duration::from_secs(20),
        || async { recorder.numbers() },
        |n| n.len() >= 4,
    )
    .await;
    assert_eq!(seen, [0, 2, 1, 3], "commit order, not staging order");
    cancel.cancel();
    relay.await.unwrap().unwrap();
    drop(wal);
    drop_tailing(&store).await;
}

#[tokio::test]
async fn a_retry_holds_back_only_its_own_key() {
    let store = tailing_store(TailMode::Messages, Retention::Delete).await;
    let wal = wal_store(&store);
    let publisher = Recorder::publisher();
    let recorder = publisher.get_ref().clone();
    let mut ids = Vec::new();
    let mut ctx = store.begin().await.unwrap();
    for (n, key) in [(0u64, "a"), (1, "b"), (2, "a"), (3, "b"), (4, "a")] {
        let staged = ctx
            .outbox()
            .stage(&KEYED_EVENTS, "test.event", &n)
            .unwrap()
            .ordering_key(key);
        ids.push(staged.envelope().event_id);
    }
    recorder.fail_once(ids[0]);
    ctx.commit().await.unwrap();
    let (cancel, relay) = run_relay(&wal, &KEYED_EVENTS, publisher.clone());
    let seen = eventually(
        Duration::from_secs(30),
        || async { recorder.numbers() },
        |n| n.len() >= 5,
    )
    .await;
    let of_a: Vec<u64> = seen.iter().copied().filter(|n| n % 2 == 0).collect();
    assert_eq!(
        of_a,
        [0, 2, 4],
        "key a waits for its retried event: {seen:?}"
    );
    let first_b = seen.iter().position(|n| *n == 1).unwrap();
    let first_a = seen.iter().position(|n| *n == 0).unwrap();
    assert!(first_b < first_a, "key b went on meanwhile: {seen:?}");
    cancel.cancel();
    relay.await.unwrap().unwrap();
    drop(wal);
    drop_tailing(&store).await;
}

#[tokio::test]
async fn a_one_megabyte_event_goes_through_message_mode() {
    let store = tailing_store(TailMode::Messages, Retention::Delete).await;
    let wal = wal_store(&store);
    let publisher = Recorder::publisher();
    let (cancel, relay) = run_relay(&wal, &ORDER_EVENTS, publisher.clone());
    static BIG: OutboxSpec<String> = OutboxSpec::json("order-events").destination("orders");
    let payload = "x".repeat(1 << 20);
    let mut ctx = store.begin().await.unwrap();
    ctx.outbox().stage(&BIG, "test.big", &payload).unwrap();
    ctx.commit().await.unwrap();
    let recorder = publisher.get_ref().clone();
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
    cancel.cancel();
    relay.await.unwrap().unwrap();
    drop(wal);
    drop_tailing(&store).await;
}

async fn a_delayed_event_waits(mode: TailMode) {
    let store = tailing_store(mode, Retention::Delete).await;
    let wal = wal_store(&store);
    let publisher = Recorder::publisher();
    let (cancel, relay) = run_relay(&wal, &ORDER_EVENTS, publisher.clone());
    let mut ctx = store.begin().await.unwrap();
    ctx.outbox()
        .stage(&ORDER_EVENTS, "test.event", &1)
        .unwrap()
        .delay(Duration::from_millis(1500));
    ctx.outbox().stage(&ORDER_EVENTS, "test.event", &2).unwrap();
    ctx.commit().await.unwrap();
    let committed = std::time::Instant::now();
    let recorder = publisher.get_ref().clone();
    let first = eventually(
        Duration::from_secs(10),
        || async { recorder.numbers() },
        |n| !n.is_empty(),
    )
    .await;
    assert_eq!(first, [2], "the delayed event waits");
    let both = eventually(
        Duration::from_secs(10),
        || async { recorder.numbers() },
        |n| n.len() >= 2,
    )
    .await;
    assert_eq!(both, [2, 1]);
    assert!(
        committed.elapsed() >= Duration::from_millis(1400),
        "{:?}",
        committed.elapsed()
    );
    cancel.cancel();
    relay.await.unwrap().unwrap();
    drop(wal);
    drop_tailing(&store).await;
}

#[tokio::test]
async fn message_mode_holds_a_delayed_event_until_due() {
    a_delayed_event_waits(TailMode::Messages).await;
}

#[tokio::test]
async fn table_mode_holds_a_delayed_event_until_due() {
    a_delayed_event_waits(TailMode::Table).await;
}
