//! Automatic correlation end to end: a handler on one RabbitMQ queue
//! stages events in its PostgreSQL transaction; they are relayed to a
//! second queue and arrive there with the first message's correlation id
//! and its event id as their causation id, unless the handler set them.

use crate::support;

use std::collections::HashMap;
use std::time::Duration;

use support::ids::{SeenIds, recording_ids};
use support::postgres_rabbitmq::{Order, World, options, run_until};
use tidings_consumer::{Consumer, TxHandle, handler_fn};
use tidings_core::relay::Relay;
use tidings_core::{Message, OutboxSpec, OutboxStore};
use tidings_postgres::PgContext;
use tidings_rabbitmq::QueueKind;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_staged_by_a_handler_arrive_with_its_message_as_their_cause() {
    let (orders, billing) = (
        World::new(QueueKind::Classic).await,
        World::new(QueueKind::Classic).await,
    );
    let billed: &'static OutboxSpec<Order> = Box::leak(Box::new(
        OutboxSpec::json("billing-events").destination(billing.queue.name()),
    ));
    // Order 0 in a flow, order 1 without one, order 2 with ids of its own.
    let mut sent = vec![orders.envelope(0), orders.envelope(1), orders.envelope(2)];
    sent[0].correlation_id = Some("checkout-7".into());
    for envelope in &sent {
        orders.publish(envelope).await;
    }
    let bill = handler_fn(
        move |msg: Message<Order>, tx: TxHandle<PgContext<'static>>| async move {
            let mut ctx = tx.lock().await;
            let staged = ctx.outbox().stage(billed, "order.billed", &msg.payload)?;
            if msg.payload.id == 2 {
                staged.correlation_id("own").causation_id("manual");
            }
            Ok(())
        },
    );
    let consumer = Consumer::new(orders.source.clone(), orders.queue, bill)
        .unwrap()
        .inbox(orders.inbox())
        .options(options());
    let report = run_until(consumer, |r| async move { r.processed == 3 }).await;
    assert_eq!(report.processed, 3, "{report:?}");

    let relay = Relay::new(orders.store.clone(), orders.publisher.clone(), billed).unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while orders.store.stats(billed.name()).await.unwrap().pending > 0 {
        assert!(tokio::time::Instant::now() < deadline, "not relayed");
        relay.drain().await.unwrap();
    }

    let seen = SeenIds::default();
    let consumer = Consumer::new(billing.source.clone(), billing.queue, recording_ids(&seen))
        .unwrap()
        .inbox(billing.inbox())
        .options(options());
    run_until(consumer, |r| async move { r.processed == 3 }).await;

    let id = |n: usize| Some(sent[n].event_id.to_string());
    let want = HashMap::from([
        (0, (Some("checkout-7".to_owned()), id(0))),
        (1, (id(1), id(1))),
        (2, (Some("own".to_owned()), Some("manual".to_owned()))),
    ]);
    assert_eq!(*seen.lock().unwrap(), want);
    orders.drop().await;
    billing.drop().await;
}
