//! One trace from the business transaction to the handler through Kafka,
//! with the spans of the OpenTelemetry messaging conventions.

mod support;

use std::sync::Arc;
use std::time::Duration;

use support::{client, create_topic, group};
use tidings_consumer::{Consumer, ConsumerOptions, TxHandle, handler_fn};
use tidings_core::memory::{MemoryContext, MemoryStore};
use tidings_core::relay::Relay;
use tidings_core::{Message, OutboxSpec, QueueSpec};
use tidings_inbox::Inbox;
use tidings_kafka::{KafkaPublisher, KafkaSource, PublisherOptions};
use tidings_testing::consumer::Order;
use tidings_testing::otel::{Trip, exporter};
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn staging_relay_and_handler_share_the_business_transactions_trace() {
    exporter();
    let topic: &'static str = Box::leak(create_topic("traced", 1).await.into_boxed_str());
    let outbox: &'static OutboxSpec<Order> = Box::leak(Box::new(
        OutboxSpec::json("order-events").destination(topic),
    ));
    let queue: &'static QueueSpec<Order> = Box::leak(Box::new(QueueSpec::json(topic)));
    let store = MemoryStore::new();

    let event_id = tracing::info_span!("place_order").in_scope(|| {
        let mut ctx = store.begin();
        let staged = ctx.outbox().stage(outbox, "order.placed", &Order { id: 1 });
        let id = staged
            .unwrap()
            .ordering_key("customer-7")
            .envelope()
            .event_id;
        ctx.commit().unwrap();
        id
    });
    let publisher = KafkaPublisher::new(&client(), PublisherOptions::default()).unwrap();
    let relay = Relay::new(store.clone(), publisher, outbox).unwrap();
    assert_eq!(relay.drain().await.unwrap().published, 1);

    let handler = handler_fn(
        |msg: Message<Order>, tx: TxHandle<MemoryContext>| async move {
            let mut tx = tx.lock().await;
            tx.insert("effects", msg.payload.id.to_string(), "1");
            Ok(())
        },
    );
    let source = KafkaSource::new(&client(), group("traced")).unwrap();
    let consumer = Consumer::new(source, queue, handler)
        .unwrap()
        .inbox(Inbox::new(MemoryStore::new(), "billing").unwrap())
        .options(ConsumerOptions::default().shutdown_timeout(Duration::from_secs(10)));
    let consumer = Arc::new(consumer);
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (consumer, cancel) = (consumer.clone(), cancel.clone());
        async move { consumer.run(cancel).await }
    });
    let deadline = tokio::time::Instant::now() + support::WAIT;
    while consumer.report().processed < 1 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cancel.cancel();
    task.await.unwrap();
    assert_eq!(consumer.report().processed, 1);

    Trip::of("place_order", topic)
        .await
        .assert_one_trace("kafka", &event_id.to_string());
}
