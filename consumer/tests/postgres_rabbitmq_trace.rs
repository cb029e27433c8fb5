//! One trace from the business transaction to the handler, through
//! PostgreSQL and RabbitMQ, with the spans of the OpenTelemetry messaging
//! conventions.

mod support;

use opentelemetry::trace::{SpanKind, Status};
use support::postgres_rabbitmq::{Order, World, apply, options, run_until};
use tidings_consumer::{Consumer, TxHandle, handler_fn};
use tidings_core::relay::Relay;
use tidings_core::{Message, OutboxSpec};
use tidings_postgres::PgContext;
use tidings_rabbitmq::QueueKind;
use tidings_testing::otel::{Trip, assert_attributes, attribute, exporter, is_root, span_named};
use tracing::Instrument;

macro_rules! consume_one {
    ($world:expr) => {{
        let sql = $world.effect_sql();
        let handler = handler_fn(
            move |msg: Message<Order>, tx: TxHandle<PgContext<'static>>| {
                let sql = sql.clone();
                async move { apply(&sql, &msg, &tx).await }
            },
        );
        let consumer = Consumer::new($world.source.clone(), $world.queue, handler)
            .unwrap()
            .inbox($world.inbox())
            .options(options());
        run_until(consumer, |report| async move { report.processed == 1 }).await
    }};
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn staging_relay_and_handler_share_the_business_transactions_trace() {
    exporter();
    let world = World::new(QueueKind::Quorum).await;
    let queue = world.queue.name();
    let spec: &'static OutboxSpec<Order> = Box::leak(Box::new(
        OutboxSpec::json("order-events").destination(queue),
    ));

    let root = tracing::info_span!("place_order");
    let event_id = async {
        let mut ctx = world.store.begin().await.unwrap();
        let id = ctx
            .outbox()
            .stage(spec, "order.placed", &Order { id: 1 })
            .unwrap()
            .correlation_id("checkout-1")
            .envelope()
            .event_id;
        ctx.commit().await.unwrap();
        id
    }
    .instrument(root.clone())
    .await;
    drop(root);

    let relay = Relay::new(world.store.clone(), world.publisher.clone(), spec).unwrap();
    assert_eq!(relay.drain().await.unwrap().published, 1);
    let report = consume_one!(world);
    assert_eq!(report.processed, 1);

    let trip = Trip::of("place_order", queue).await;
    let ack = span_named(&format!("ack {queue}")).await;
    let id = event_id.to_string();
    // The relay publishes in a trace of its own, linked to each message's
    // creation context; the handler runs in the business transaction's
    // trace, a child of the message's creation context and linked to it.
    trip.assert_one_trace("rabbitmq", &id);
    let Trip {
        root,
        create,
        send,
        process,
    } = trip;

    assert_eq!(create.span_context.trace_id(), root.span_context.trace_id());
    assert_eq!(create.span_kind, SpanKind::Producer);
    assert_eq!(
        attribute(&create, "messaging.operation.type").as_deref(),
        Some("create")
    );
    assert_eq!(attribute(&create, "messaging.message.id"), Some(id.clone()));
    let sent = [
        ("messaging.operation.type", "send"),
        ("messaging.operation.name", "send"),
        ("messaging.destination.name", queue),
        ("messaging.rabbitmq.destination.routing_key", queue),
        ("messaging.message.conversation_id", "checkout-1"),
    ];
    assert_attributes(&send, "send", &sent);
    let processed = [
        ("messaging.destination.name", queue),
        ("messaging.consumer.group.name", "billing"),
        ("messaging.message.conversation_id", "checkout-1"),
    ];
    assert_attributes(&process, "process", &processed);
    assert_eq!(process.status, Status::Unset);
    assert_eq!(attribute(&process, "error.type"), None);

    assert_eq!(ack.parent_span_id, process.span_context.span_id());
    assert_eq!(ack.span_kind, SpanKind::Client);
    assert_eq!(
        attribute(&ack, "messaging.operation.type").as_deref(),
        Some("settle")
    );
    world.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_without_trace_context_is_processed_in_a_trace_of_its_own() {
    exporter();
    let world = World::new(QueueKind::Classic).await;
    world.publish(&world.envelope(2)).await;
    assert_eq!(consume_one!(world).processed, 1);
    let process = span_named(&format!("process {}", world.queue.name())).await;
    assert!(is_root(&process), "process span has a parent");
    assert!(process.links.is_empty());
    world.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_traceparent_is_ignored() {
    exporter();
    let world = World::new(QueueKind::Classic).await;
    let mut envelope = world.envelope(3);
    envelope
        .headers
        .insert("traceparent".into(), "00-not-a-trace-01".into());
    world.publish(&envelope).await;
    let report = consume_one!(world);
    assert_eq!((report.processed, report.parked, report.failed), (1, 0, 0));
    let process = span_named(&format!("process {}", world.queue.name())).await;
    assert!(is_root(&process), "process span has a parent");
    assert!(process.links.is_empty());
    world.drop().await;
}
