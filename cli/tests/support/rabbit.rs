//! RabbitMQ queues of a test's own, dead letters parked in them directly,
//! and messages taken out to count them.

use std::time::Duration;

use tidings_admin::tidings_rabbitmq::lapin::options::{
    BasicGetOptions, ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions,
    QueueDeleteOptions,
};
use tidings_admin::tidings_rabbitmq::lapin::types::{AMQPValue, FieldTable, LongString};
use tidings_admin::tidings_rabbitmq::lapin::{
    BasicProperties, Channel, Connection, ConnectionProperties, ExchangeKind,
};
use tidings_admin::tidings_rabbitmq::{
    ConnectionOptions, QueueOptions, RabbitSource, SourceOptions, Topology, dead_letter_exchange,
    dead_letter_queue,
};
use tidings_core::{Backoff, Envelope};
use tidings_testing::names::unique_name;
use tidings_testing::services::{amqp_url, service_missing};

/// How long the test's queues outlive their last use.
const EXPIRES: Duration = Duration::from_secs(120);

/// Declares a classic queue of the test's own with its dead-letter queue.
pub(crate) async fn declare(prefix: &str) -> &'static str {
    declare_as(prefix, QueueOptions::classic()).await
}

/// Declares a queue of the test's own, of the kind `options` give, with
/// its dead-letter queue.
pub(crate) async fn declare_as(prefix: &str, options: QueueOptions) -> &'static str {
    let name: &'static str = Box::leak(unique_name(prefix).into_boxed_str());
    Topology::new(ConnectionOptions::new(amqp_url()))
        .declare_queue(name, options.expires(EXPIRES))
        .await
        .unwrap_or_else(|e| service_missing("RabbitMQ", &amqp_url(), &e));
    name
}

/// Declares a quorum queue of the test's own whose dead-letter queue is a
/// quorum queue with a delivery limit of 20, as RabbitMQ 4 gives every
/// quorum queue by default (3.10 has none unless declared): a message
/// handed back to it more than 20 times is dropped, since a dead-letter
/// queue has no dead-letter exchange of its own.
pub(crate) async fn declare_with_delivery_limit(prefix: &str) -> &'static str {
    let name = declare_as(prefix, QueueOptions::quorum()).await;
    let dlq = dead_letter_queue(name);
    let (connection, channel) = channel().await;
    channel
        .queue_delete(dlq.as_str().into(), QueueDeleteOptions::default())
        .await
        .unwrap();
    let mut arguments = FieldTable::default();
    arguments.insert("x-queue-type".into(), text("quorum"));
    arguments.insert("x-delivery-limit".into(), AMQPValue::LongLongInt(20));
    arguments.insert(
        "x-expires".into(),
        AMQPValue::LongLongInt(EXPIRES.as_millis() as i64),
    );
    let durable = QueueDeclareOptions {
        durable: true,
        ..QueueDeclareOptions::default()
    };
    channel
        .queue_declare(dlq.as_str().into(), durable, arguments)
        .await
        .unwrap();
    // Deleting the queue deleted its dead-letter exchange too (declared to
    // go with its last binding): declared again as the topology does.
    let exchange = ExchangeDeclareOptions {
        durable: true,
        auto_delete: true,
        ..ExchangeDeclareOptions::default()
    };
    channel
        .exchange_declare(
            dead_letter_exchange(name).as_str().into(),
            ExchangeKind::Fanout,
            exchange,
            FieldTable::default(),
        )
        .await
        .unwrap();
    channel
        .queue_bind(
            dlq.as_str().into(),
            dead_letter_exchange(name).as_str().into(),
            "".into(),
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await
        .unwrap();
    let _ = connection.close(200, "OK".into()).await;
    name
}

/// A source that reconnects quickly.
pub(crate) fn rabbit_source() -> RabbitSource {
    let backoff = Backoff::new(Duration::from_millis(20), Duration::from_millis(200));
    RabbitSource::new(
        ConnectionOptions::new(amqp_url()).reconnect_backoff(backoff),
        SourceOptions::default(),
    )
}

async fn channel() -> (Connection, Channel) {
    let connection = Connection::connect(&amqp_url(), ConnectionProperties::default())
        .await
        .unwrap();
    let channel = connection.create_channel().await.unwrap();
    (connection, channel)
}

fn text(value: &str) -> AMQPValue {
    AMQPValue::LongString(LongString::from(value))
}

/// Puts a copy of `envelope` straight into `queue`'s dead-letter queue, as
/// the acker would with `reason`.
pub(crate) async fn park(queue: &str, envelope: &Envelope, reason: &str) {
    let mut headers = FieldTable::default();
    for (name, value) in tidings_core::cloudevents::to_attributes(envelope) {
        headers.insert(name.into(), text(&value));
    }
    headers.insert("x-dead-letter-reason".into(), text(reason));
    let properties = BasicProperties::default()
        .with_message_id(envelope.event_id.to_string().into())
        .with_type(envelope.event_type.as_str().into())
        .with_headers(headers);
    let (connection, channel) = channel().await;
    let dlq = dead_letter_queue(queue);
    channel
        .basic_publish(
            "".into(),
            dlq.as_str().into(),
            Default::default(),
            &envelope.payload,
            properties,
        )
        .await
        .unwrap()
        .await
        .unwrap();
    let _ = connection.close(200, "OK".into()).await;
}

/// Deletes `queue` itself, leaving its dead-letter queue.
pub(crate) async fn delete_only(queue: &str) {
    let (connection, channel) = channel().await;
    channel
        .queue_delete(queue.into(), QueueDeleteOptions::default())
        .await
        .unwrap();
    let _ = connection.close(200, "OK".into()).await;
}

/// The message ids in `queue`, taken out of it.
pub(crate) async fn drain(queue: &str) -> Vec<String> {
    let (connection, channel) = channel().await;
    let mut ids = Vec::new();
    while let Some(got) = channel
        .basic_get(queue.into(), BasicGetOptions { no_ack: true })
        .await
        .unwrap()
    {
        let id = got.delivery.properties.message_id().as_ref().unwrap();
        ids.push(id.to_string());
    }
    let _ = connection.close(200, "OK".into()).await;
    ids
}

/// Deletes `queue` with everything declared along with it.
pub(crate) async fn remove(queue: &str) {
    Topology::new(ConnectionOptions::new(amqp_url()))
        .delete_queue(queue)
        .await
        .unwrap();
}
