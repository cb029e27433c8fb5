use std::collections::HashSet;
use std::time::{Duration, Instant};

use tidings_core::relay::Relay;
use tidings_core::{OutboxStore, StoreError};
use tidings_postgres::{Retention, TailMode};
use tidings_testing::eventually::eventually;

use crate::setup::{Recorder, drop_tailing, run_relay, tailing_store, wal_store};
use crate::support::{ORDER_EVENTS, stage_to};

#[tokio::test]
async fn one_relay_reads_the_slot_and_a_standby_takes_over() {
    let store = tailing_store(TailMode::Messages, Retention::Delete).await;
    let first = wal_store(&store);
    let reading = eventually(
        Duration::from_secs(10),
        || async { first.is_reading() },
        |r| *r,
    )
    .await;
    assert!(reading, "the first store reads the slot");
    let second = wal_store(&store);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        !second.is_reading(),
        "the slot has one reader; the second stands by"
    );

    let publisher = Recorder::publisher();
    let (cancel, relay) = run_relay(&second, &ORDER_EVENTS, publisher.clone());
    let stopped = Instant::now();
    drop(first);
    let took_over = eventually(
        Duration::from_secs(15),
        || async { second.is_reading() },
        |r| *r,
    )
    .await;
    let takeover = stopped.elapsed();
    assert!(took_over, "the standby takes the slot over");
    assert!(takeover < Duration::from_secs(5), "took {takeover:?}");
    stage_to(&store, &ORDER_EVENTS, 3).await;
    let recorder = publisher.get_ref().clone();
    let seen = eventually(
        Duration::from_secs(20),
        || async { recorder.numbers() },
        |n| n.len() >= 3,
    )
    .await;
    assert_eq!(seen, [0, 1, 2]);
    cancel.cancel();
    relay.await.unwrap().unwrap();
    drop(second);
    drop_tailing(&store).await;
}

#[tokio::test]
async fn a_relay_killed_mid_stream_loses_nothing() {
    let store = tailing_store(TailMode::Table, Retention::Delete).await;
    stage_to(&store, &ORDER_EVENTS, 2_000).await;
    let publisher = Recorder::publisher();
    let recorder = publisher.get_ref().clone();
    recorder.slow(Duration::from_millis(2));
    // The first relay runs on a runtime of its own, shut down mid-stream:
    // its tasks stop where they are and its connections drop, as in a kill.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    // A store of its own, whose pool lives and dies with that runtime.
    let options = store.options().clone();
    let killed_publisher = publisher.clone();
    runtime.spawn(async move {
        let pool = crate::setup::logical_pool().await;
        let killed_store = tidings_postgres::PgOutboxStore::new(pool, options).unwrap();
        let wal = wal_store(&killed_store);
        let relay = Relay::new(wal.clone(), killed_publisher, &ORDER_EVENTS)
            .unwrap()
            .wakeup(wal.wakeup());
        let _ = relay.run(tokio_util::sync::CancellationToken::new()).await;
    });
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
    let wal = wal_store(&store);
    let (cancel, relay) = run_relay(&wal, &ORDER_EVENTS, publisher.clone());
    let distinct = eventually(
        Duration::from_secs(60),
        || async { recorder.numbers().into_iter().collect::<HashSet<_>>().len() },
        |n| *n == 2_000,
    )
    .await;
    assert_eq!(distinct, 2_000, "every event published");
    let total = recorder.numbers().len();
    let duplicates = total - 2_000;
    assert!(duplicates <= before + 1_000, "{duplicates} published twice");
    let stats = eventually(
        Duration::from_secs(10),
        || async { store.stats("order-events").await.unwrap() },
        |s| s.pending == 0,
    )
    .await;
    assert_eq!(stats.pending, 0, "every row removed");
    cancel.cancel();
    relay.await.unwrap().unwrap();
    drop(wal);
    drop_tailing(&store).await;
}

async fn recreated_slot_is_detected(mode: TailMode) {
    let store = tailing_store(mode, Retention::Delete).await;
    let publisher = Recorder::publisher();
    let recorder = publisher.get_ref().clone();
    {
        let wal = wal_store(&store);
        let (cancel, relay) = run_relay(&wal, &ORDER_EVENTS, publisher.clone());
        stage_to(&store, &ORDER_EVENTS, 2).await;
        eventually(
            Duration::from_secs(20),
            || async { recorder.numbers() },
            |n| n.len() >= 2,
        )
        .await;
        cancel.cancel();
        relay.await.unwrap().unwrap();
    }
    // Staged while no relay runs, then the slot is dropped and created anew.
    stage_to(&store, &ORDER_EVENTS, 3).await;
    let slot = format!("{}_slot", store.options().get_schema());
    let pool = store.pool();
    eventually(
        Duration::from_secs(10),
        || async {
            sqlx::query("select pg_drop_replication_slot($1)")
                .bind(&slot)
                .execute(pool)
                .await
                .is_ok()
        },
        |dropped| *dropped,
    )
    .await;
    // Something else is written, so the new slot starts further on.
    sqlx::query("select pg_logical_emit_message(false, 'elsewhere', 'x')")
        .execute(pool)
        .await
        .unwrap();
    store.migrate().await.unwrap();

    let wal = wal_store(&store);
    let (cancel, relay) = run_relay(&wal, &ORDER_EVENTS, publisher.clone());
    let ended = tokio::time::timeout(Duration::from_secs(20), relay)
        .await
        .unwrap()
        .unwrap();
    let error = ended.unwrap_err();
    assert!(matches!(error, StoreError::Misconfigured(_)), "{error}");
    let message = error.to_string();
    assert!(
        message.contains("accept_slot_position") && message.contains(&slot),
        "{message}"
    );
    assert_eq!(
        recorder.numbers().len(),
        2,
        "nothing read past the lost slot"
    );
    cancel.cancel();
    drop(wal);

    store.accept_slot_position().await.unwrap();
    let wal = wal_store(&store);
    let (cancel, relay) = run_relay(&wal, &ORDER_EVENTS, publisher.clone());
    stage_to(&store, &ORDER_EVENTS, 1).await;
    let expected = match mode {
        // The pending rows are staged again for the new slot.
        TailMode::Table => vec![0, 1, 0, 1, 2, 0],
        // The messages written while no slot kept the log are gone.
        TailMode::Messages => vec![0, 1, 0],
    };
    let seen = eventually(
        Duration::from_secs(20),
        || async { recorder.numbers() },
        |n| n.len() >= expected.len(),
    )
    .await;
    assert_eq!(seen, expected);
    cancel.cancel();
    relay.await.unwrap().unwrap();
    drop(wal);
    drop_tailing(&store).await;
}

#[tokio::test]
async fn a_recreated_slot_stops_the_table_relay_until_accepted() {
    recreated_slot_is_detected(TailMode::Table).await;
}

#[tokio::test]
async fn a_recreated_slot_stops_the_message_relay_until_accepted() {
    recreated_slot_is_detected(TailMode::Messages).await;
}
