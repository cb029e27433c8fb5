use std::collections::HashSet;
use std::time::{Duration, Instant};

use tidings_core::StoreError;
use tidings_core::relay::RelayOptions;
use tidings_postgres::wal::{WalOptions, WalStore};
use tidings_postgres::{PgOutboxOptions, PgOutboxStore, Retention, TailMode};
use tidings_testing::eventually::eventually;

use crate::setup::{Recorder, Tailed, doomed_relay, logical_pool, tailing_store_on, wal_store};
use crate::support::{ORDER_EVENTS, stage_to};

#[tokio::test]
async fn one_relay_reads_the_slot_and_a_standby_takes_over() {
    let first = Tailed::new(TailMode::Messages, Retention::Delete).await;
    let reading = eventually(
        Duration::from_secs(10),
        || async { first.wal.is_reading() },
        |r| *r,
    )
    .await;
    assert!(reading, "the first store reads the slot");
    let mut second = Tailed::on(first.store.clone());
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        !second.wal.is_reading(),
        "the slot has one reader; the second stands by"
    );

    second.relay(&ORDER_EVENTS);
    let stopped = Instant::now();
    drop(first);
    let took_over = eventually(
        Duration::from_secs(15),
        || async { second.wal.is_reading() },
        |r| *r,
    )
    .await;
    let takeover = stopped.elapsed();
    assert!(took_over, "the standby takes the slot over");
    assert!(takeover < Duration::from_secs(5), "took {takeover:?}");
    stage_to(&second.store, &ORDER_EVENTS, 3).await;
    assert_eq!(second.published(3).await, [0, 1, 2]);
    second.finish().await;
}

#[tokio::test]
async fn a_relay_killed_mid_stream_loses_nothing() {
    let store = tailing_store_on(
        logical_pool().await,
        TailMode::Table,
        PgOutboxOptions::new(),
    )
    .await;
    stage_to(&store, &ORDER_EVENTS, 2_000).await;
    let recorder = Recorder::default();
    recorder.slow(Duration::from_millis(2));
    let runtime = doomed_relay(&store, &recorder, RelayOptions::default());
    let before = eventually(
        Duration::from_secs(30),
        || async { recorder.numbers().len() },
        |n| *n >= 300,
    )
    .await;
    assert!(
        (300..2_000).contains(&before),
        "killed mid-stream, after {before}"
    );
    runtime.shutdown_background();

    recorder.slow(Duration::ZERO);
    let mut t = Tailed::on(store);
    t.recorder = recorder.clone();
    t.relay(&ORDER_EVENTS);
    let distinct = eventually(
        Duration::from_secs(60),
        || async { recorder.numbers().into_iter().collect::<HashSet<_>>().len() },
        |n| *n == 2_000,
    )
    .await;
    assert_eq!(distinct, 2_000, "every event published");
    let duplicates = recorder.numbers().len() - 2_000;
    assert!(duplicates <= before + 1_000, "{duplicates} published twice");
    let stats = t.stats_when("order-events", |s| s.pending == 0).await;
    assert_eq!(stats.pending, 0, "every row removed");
    t.finish().await;
}

async fn recreated_slot_is_detected(mode: TailMode) {
    let store = tailing_store_on(logical_pool().await, mode, PgOutboxOptions::new()).await;
    let mut first = Tailed::on(store.clone());
    first.relay(&ORDER_EVENTS);
    stage_to(&store, &ORDER_EVENTS, 2).await;
    first.published(2).await;
    first.stop_relay().await;
    let recorder = first.recorder.clone();
    drop(first);
    // Staged while no relay reads, then the slot is dropped and created anew.
    stage_to(&store, &ORDER_EVENTS, 3).await;
    let slot = format!("{}_slot", store.options().get_schema());
    let pool = store.pool();
    let dropped = || async {
        let drop = sqlx::query("select pg_drop_replication_slot($1)").bind(&slot);
        drop.execute(pool).await.is_ok()
    };
    assert!(eventually(Duration::from_secs(10), dropped, |d| *d).await);
    // Something else is written, so the new slot starts further on.
    sqlx::query("select pg_logical_emit_message(false, 'elsewhere', 'x')")
        .execute(pool)
        .await
        .unwrap();
    store.migrate().await.unwrap();

    let mut t = Tailed::on(store.clone());
    t.recorder = recorder;
    t.relay(&ORDER_EVENTS);
    let error = t.relay_ended().await.unwrap_err();
    assert!(matches!(error, StoreError::Misconfigured(_)), "{error}");
    let message = error.to_string();
    assert!(
        message.contains("accept_slot_position") && message.contains(&slot),
        "{message}"
    );
    assert_eq!(
        t.recorder.numbers().len(),
        2,
        "nothing read past the lost slot"
    );

    t.store.accept_slot_position().await.unwrap();
    t.wal = wal_store(&t.store);
    t.relay(&ORDER_EVENTS);
    stage_to(&t.store, &ORDER_EVENTS, 1).await;
    let expected = match mode {
        // The pending rows are staged again for the new slot.
        TailMode::Table => vec![0, 1, 0, 1, 2, 0],
        // The messages written while no slot kept the log are gone.
        TailMode::Messages => vec![0, 1, 0],
    };
    assert_eq!(t.published(expected.len()).await, expected);
    t.finish().await;
}

in_both_modes!(
    recreated_slot_is_detected:
    messages a_recreated_slot_stops_the_message_relay_until_accepted,
    table a_recreated_slot_stops_the_table_relay_until_accepted
);

#[tokio::test]
async fn a_store_without_log_tailing_has_no_slot_to_read() {
    let store = PgOutboxStore::new(logical_pool().await, PgOutboxOptions::new()).unwrap();
    let options = WalOptions::new("postgres://h/db")
        .unwrap()
        .route(&ORDER_EVENTS);
    let refused = WalStore::start(store, options).unwrap_err();
    assert!(matches!(refused, StoreError::Misconfigured(_)), "{refused}");
}
