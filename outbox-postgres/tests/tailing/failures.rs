use std::time::Duration;

use tidings_core::{OutboxSpec, OutboxStore, Requeue};
use tidings_postgres::{Retention, TailMode};
use tidings_testing::eventually::eventually;

use crate::setup::{Recorder, drop_tailing, run_relay, tailing_store, wal_store};
use crate::support::ORDER_EVENTS;

async fn poison_fails_alone_and_is_requeued(mode: TailMode) {
    let store = tailing_store(mode, Retention::Delete).await;
    let wal = wal_store(&store);
    let publisher = Recorder::publisher();
    let recorder = publisher.get_ref().clone();
    let mut ctx = store.begin().await.unwrap();
    let mut ids = Vec::new();
    for n in 0..5u64 {
        ids.push(
            ctx.outbox()
                .stage(&ORDER_EVENTS, "test.event", &n)
                .unwrap()
                .envelope()
                .event_id,
        );
    }
    recorder.poison(ids[2]);
    ctx.commit().await.unwrap();
    let (cancel, relay) = run_relay(&wal, &ORDER_EVENTS, publisher.clone());
    let stats = eventually(
        Duration::from_secs(20),
        || async { store.stats("order-events").await.unwrap() },
        |s| s.failed == 1,
    )
    .await;
    assert_eq!(stats.failed, 1, "the poison event is failed in the table");
    assert_eq!(recorder.numbers(), [0, 1, 3, 4], "the others went on");

    // Requeued, it is staged again and published once the broker takes it.
    recorder.cure();
    let requeued = store
        .requeue_failed("order-events", Requeue::All)
        .await
        .unwrap();
    assert_eq!(requeued, 1);
    let seen = eventually(
        Duration::from_secs(20),
        || async { recorder.numbers() },
        |n| n.len() >= 5,
    )
    .await;
    assert_eq!(seen, [0, 1, 3, 4, 2]);
    let stats = eventually(
        Duration::from_secs(5),
        || async { store.stats("order-events").await.unwrap() },
        |s| s.failed == 0,
    )
    .await;
    assert_eq!(stats.failed, 0);
    cancel.cancel();
    relay.await.unwrap().unwrap();
    drop(wal);
    drop_tailing(&store).await;
}

#[tokio::test]
async fn message_mode_fails_poison_alone_into_the_table() {
    poison_fails_alone_and_is_requeued(TailMode::Messages).await;
}

#[tokio::test]
async fn table_mode_fails_poison_alone_in_its_row() {
    poison_fails_alone_and_is_requeued(TailMode::Table).await;
}

#[tokio::test]
async fn events_of_a_route_no_relay_serves_are_failed_not_lost() {
    static STRAY: OutboxSpec<u64> = OutboxSpec::json("stray-events").destination("orders");
    let store = tailing_store(TailMode::Messages, Retention::Delete).await;
    let wal = wal_store(&store);
    let publisher = Recorder::publisher();
    let (cancel, relay) = run_relay(&wal, &ORDER_EVENTS, publisher.clone());
    let mut ctx = store.begin().await.unwrap();
    ctx.outbox().stage(&STRAY, "test.event", &7).unwrap();
    ctx.outbox().stage(&ORDER_EVENTS, "test.event", &8).unwrap();
    ctx.commit().await.unwrap();
    let stats = eventually(
        Duration::from_secs(20),
        || async { store.stats("stray-events").await.unwrap() },
        |s| s.failed == 1,
    )
    .await;
    assert_eq!(stats.failed, 1);
    let recorder = publisher.get_ref().clone();
    let seen = eventually(
        Duration::from_secs(10),
        || async { recorder.numbers() },
        |n| !n.is_empty(),
    )
    .await;
    assert_eq!(seen, [8]);
    // The slot moves on past it.
    let confirmed = eventually(
        Duration::from_secs(10),
        || async { store.slot_state().await.unwrap().unwrap() },
        |s| s.lag_bytes() < 1 << 16,
    )
    .await;
    assert!(confirmed.lag_bytes() < 1 << 16, "{confirmed:?}");
    cancel.cancel();
    relay.await.unwrap().unwrap();
    drop(wal);
    drop_tailing(&store).await;
}

#[tokio::test]
async fn an_unreadable_message_is_failed_and_the_stream_goes_on() {
    let store = tailing_store(TailMode::Messages, Retention::Delete).await;
    let wal = wal_store(&store);
    let publisher = Recorder::publisher();
    let (cancel, relay) = run_relay(&wal, &ORDER_EVENTS, publisher.clone());
    let prefix = format!("tidings:{}.tidings_outbox", store.options().get_schema());
    let mut ctx = store.begin().await.unwrap();
    sqlx::query("select pg_logical_emit_message(true, $1, '\\x01ffff'::bytea)")
        .bind(&prefix)
        .execute(ctx.tx())
        .await
        .unwrap();
    // A message of another prefix is none of the relay's business.
    sqlx::query("select pg_logical_emit_message(true, 'someone-else', 'hello')")
        .execute(ctx.tx())
        .await
        .unwrap();
    ctx.outbox().stage(&ORDER_EVENTS, "test.event", &9).unwrap();
    ctx.commit().await.unwrap();
    let recorder = publisher.get_ref().clone();
    let seen = eventually(
        Duration::from_secs(20),
        || async { recorder.numbers() },
        |n| !n.is_empty(),
    )
    .await;
    assert_eq!(seen, [9]);
    let stats = eventually(
        Duration::from_secs(10),
        || async { store.stats("unreadable").await.unwrap() },
        |s| s.failed == 1,
    )
    .await;
    assert_eq!(
        stats.failed, 1,
        "the unreadable message is kept as a failed row"
    );
    cancel.cancel();
    relay.await.unwrap().unwrap();
    drop(wal);
    drop_tailing(&store).await;
}
