use tidings_core::OutboxSpec;
use tidings_postgres::{Retention, TailMode};

use crate::setup::Tailed;
use crate::support::ORDER_EVENTS;

async fn poison_fails_alone_and_is_requeued(mode: TailMode) {
    let mut t = Tailed::new(mode, Retention::Delete).await;
    let mut ctx = t.store.begin().await.unwrap();
    for n in 0..5u64 {
        let staged = ctx.outbox().stage(&ORDER_EVENTS, "test.event", &n).unwrap();
        if n == 2 {
            t.recorder.poison(staged.envelope().event_id);
        }
    }
    ctx.commit().await.unwrap();
    t.relay(&ORDER_EVENTS);
    let stats = t.stats_when("order-events", |s| s.failed == 1).await;
    assert_eq!(stats.failed, 1, "the poison event is failed in the table");
    assert_eq!(t.published(4).await, [0, 1, 3, 4], "the others went on");

    // Requeued, it is staged again and published once the broker takes it.
    t.recorder.cure();
    assert_eq!(t.requeue_all("order-events").await, 1);
    assert_eq!(t.published(5).await, [0, 1, 3, 4, 2]);
    let stats = t.stats_when("order-events", |s| s.failed == 0).await;
    assert_eq!(stats.failed, 0);
    t.finish().await;
}

async fn an_expired_event_is_failed_and_the_rest_published(mode: TailMode) {
    let mut t = Tailed::new(mode, Retention::Delete).await;
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(3600);
    let mut ctx = t.store.begin().await.unwrap();
    let outbox = ctx.outbox();
    outbox.stage(&ORDER_EVENTS, "test.event", &0).unwrap();
    let past = std::time::SystemTime::now() - std::time::Duration::from_secs(1);
    (outbox.stage(&ORDER_EVENTS, "test.event", &1).unwrap()).expires_at(past);
    (outbox.stage(&ORDER_EVENTS, "test.event", &2).unwrap()).expires_at(later);
    ctx.commit().await.unwrap();
    t.relay(&ORDER_EVENTS);
    let stats = t.stats_when("order-events", |s| s.failed == 1).await;
    assert_eq!(stats.failed, 1, "the expired event is failed");
    assert_eq!(t.published(2).await, [0, 2]);
    let expiries: Vec<_> = t.recorder.accepted().iter().map(|e| e.expires_at).collect();
    let later = Some(tidings_core::truncate_to_micros(later));
    assert_eq!(expiries, [None, later], "the expiry read back from the log");

    // Requeued, it keeps its expiry and is failed again, not published.
    assert_eq!(t.requeue_all("order-events").await, 1);
    let stats = t
        .stats_when("order-events", |s| s.failed == 1 && s.pending == 0)
        .await;
    assert_eq!(stats.failed, 1, "{stats:?}");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(t.recorder.numbers(), [0, 2], "the expired event went out");
    t.finish().await;
}

in_both_modes!(
    an_expired_event_is_failed_and_the_rest_published:
    messages message_mode_fails_an_expired_event,
    table table_mode_fails_an_expired_event
);

in_both_modes!(
    poison_fails_alone_and_is_requeued:
    messages message_mode_fails_poison_alone_into_the_table,
    table table_mode_fails_poison_alone_in_its_row
);

#[tokio::test]
async fn events_of_a_route_no_relay_serves_are_failed_not_lost() {
    static STRAY: OutboxSpec<u64> = OutboxSpec::json("stray-events").destination("orders");
    let mut t = Tailed::new(TailMode::Messages, Retention::Delete).await;
    t.relay(&ORDER_EVENTS);
    let mut ctx = t.store.begin().await.unwrap();
    ctx.outbox().stage(&STRAY, "test.event", &7).unwrap();
    ctx.outbox().stage(&ORDER_EVENTS, "test.event", &8).unwrap();
    ctx.commit().await.unwrap();
    let stats = t.stats_when("stray-events", |s| s.failed == 1).await;
    assert_eq!(stats.failed, 1);
    assert_eq!(t.published(1).await, [8]);
    // The slot moves on past it.
    let lag = || async { t.store.slot_state().await.unwrap().unwrap().lag_bytes() };
    let lag =
        tidings_testing::eventually::eventually(std::time::Duration::from_secs(10), lag, |l| {
            *l < 1 << 16
        })
        .await;
    assert!(lag < 1 << 16, "{lag} bytes behind");
    t.finish().await;
}

#[tokio::test]
async fn an_unreadable_message_is_failed_and_the_stream_goes_on() {
    let mut t = Tailed::new(TailMode::Messages, Retention::Delete).await;
    t.relay(&ORDER_EVENTS);
    let prefix = format!("tidings:{}.tidings_outbox", t.store.options().get_schema());
    let mut ctx = t.store.begin().await.unwrap();
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
    assert_eq!(t.published(1).await, [9]);
    let stats = t.stats_when("unreadable", |s| s.failed == 1).await;
    assert_eq!(
        stats.failed, 1,
        "the unreadable message is kept as a failed row"
    );
    t.finish().await;
}
