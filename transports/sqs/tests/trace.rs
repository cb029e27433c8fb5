//! One trace from the business transaction to the handler through SQS,
//! with the spans of the OpenTelemetry messaging conventions.

mod support;

use std::time::Duration;

use opentelemetry::trace::SpanKind;
use support::orders::{Order, count_effect, options, run_until, spec};
use support::{client, declare, queue_name, source_options};
use tidings_consumer::{Consumer, TxHandle, handler_fn};
use tidings_core::memory::{MemoryContext, MemoryStore};
use tidings_core::relay::Relay;
use tidings_core::{Message, OutboxSpec};
use tidings_inbox::Inbox;
use tidings_sqs::{PublisherOptions, QueueOptions, SqsPublisher, SqsSource};
use tidings_testing::otel::{attribute, exporter, links_to, span_named};

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
        Box::leak(Box::new(OutboxSpec::json("order-events").to_queue(name)));
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

    let root = span_named("place_order").await;
    let create = span_named(&format!("create {queue}")).await;
    let send = span_named(&format!("send {queue}")).await;
    let process = span_named(&format!("process {queue}")).await;
    let id = event_id.to_string();

    assert_eq!(create.parent_span_id, root.span_context.span_id());
    assert!(
        links_to(&send, &create),
        "send span does not link to create"
    );
    assert_eq!(send.span_kind, SpanKind::Producer);
    assert_eq!(
        attribute(&send, "messaging.system").as_deref(),
        Some("aws_sqs")
    );
    assert_eq!(attribute(&send, "messaging.message.id"), Some(id.clone()));
    let url = attribute(&send, "aws.sqs.queue.url").expect("queue url on the send span");
    assert!(url.ends_with(&queue), "{url}");

    assert_eq!(process.span_kind, SpanKind::Consumer);
    assert_eq!(
        process.span_context.trace_id(),
        root.span_context.trace_id()
    );
    assert_eq!(process.parent_span_id, create.span_context.span_id());
    assert!(
        links_to(&process, &create),
        "process span does not link to create"
    );
    assert_eq!(
        attribute(&process, "messaging.system").as_deref(),
        Some("aws_sqs")
    );
    assert_eq!(
        attribute(&process, "messaging.operation.type").as_deref(),
        Some("process")
    );
    assert_eq!(attribute(&process, "messaging.message.id"), Some(id));
}
