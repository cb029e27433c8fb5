//! One trace from the business transaction to the handler through SQS,
//! with the spans of the OpenTelemetry messaging conventions.

mod support;

use std::time::Duration;

use support::orders::{Order, count_effect, options, run_until, spec};
use support::{client, declare, queue_name, source_options};
use tidings_consumer::{Consumer, TxHandle, handler_fn};
use tidings_core::memory::{MemoryContext, MemoryStore};
use tidings_core::relay::Relay;
use tidings_core::{Message, OutboxSpec};
use tidings_inbox::Inbox;
use tidings_sqs::{PublisherOptions, QueueOptions, SqsPublisher, SqsSource};
use tidings_testing::otel::{Trip, attribute, exporter};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn staging_relay_and_handler_share_the_business_transactions_trace() {
    exporter();
    let client = client().await;
    let queue = queue_name("traced", false);
    declare(
        &client,
        &queue,
        QueueOptions::default().without_dead_letter_queue(),
    )
    .await;
    let name: &'static str = Box::leak(queue.clone().into_boxed_str());
    let outbox: &'static OutboxSpec<Order> =
        Box::leak(Box::new(OutboxSpec::json("order-events").destination(name)));
    let store = MemoryStore::new();

    let event_id = tracing::info_span!("place_order").in_scope(|| {
        let mut ctx = store.begin();
        let staged = ctx.outbox().stage(outbox, "order.placed", &Order { id: 1 });
        let id = staged.unwrap().envelope().event_id;
        ctx.commit().unwrap();
        id
    });
    let publisher = SqsPublisher::new(client.clone(), PublisherOptions::default());
    let relay = Relay::new(store.clone(), publisher, outbox).unwrap();
    assert_eq!(relay.drain().await.unwrap().published, 1);

    let handler = handler_fn(
        |msg: Message<Order>, tx: TxHandle<MemoryContext>| async move {
            count_effect(&msg, &tx).await;
            Ok(())
        },
    );
    let source = SqsSource::new(client.clone(), source_options());
    let consumer = Consumer::new(source, spec(&queue), handler)
        .unwrap()
        .inbox(Inbox::new(MemoryStore::new(), "billing").unwrap())
        .options(options());
    let report = run_until(consumer, Duration::from_secs(30), |r| r.processed == 1).await;
    assert_eq!(report.processed, 1);

    let trip = Trip::of("place_order", &queue).await;
    trip.assert_one_trace("aws_sqs", &event_id.to_string());
    let url = attribute(&trip.send, "aws.sqs.queue.url").expect("queue url on the send span");
    assert!(url.ends_with(&queue), "{url}");
}
