//! Records from producers outside tidings, sent and read with plain
//! librdkafka clients.

use std::time::Duration;

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Header, Headers, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};
use tidings_core::DEAD_LETTER_REASON_HEADER;
use tidings_testing::broker::foreign::{ForeignMessage, ForeignProducer};
use tidings_testing::names::unique_name;
use tidings_testing::services::kafka_brokers;

use super::Kafka;

impl ForeignProducer for Kafka {
    /// Kafka headers are free-form, so every binding's spelling can arrive.
    fn binding_prefixes(&self) -> &'static [&'static str] {
        &["ce_", "ce-", "cloudEvents_", "cloudEvents:"]
    }

    /// Attributes and `content-type` as headers, as the Kafka binding has
    /// it.
    async fn send_foreign(&self, queue: &str, message: &ForeignMessage) {
        send_raw(queue, &message.attributes, &message.body).await;
    }

    async fn dead_letter_reason(&self, dead_letter_queue: &str) -> Option<String> {
        let headers = first_record(dead_letter_queue, Duration::from_secs(10))
            .await?
            .0;
        headers
            .into_iter()
            .find(|(name, _)| name == DEAD_LETTER_REASON_HEADER)
            .map(|(_, value)| value)
    }
}

/// Sends one record with `headers` and `body` to partition 0 of `topic`.
pub async fn send_raw(topic: &str, headers: &[(String, String)], body: &[u8]) {
    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", kafka_brokers())
        .create()
        .expect("producer");
    let mut owned = OwnedHeaders::new();
    for (name, value) in headers {
        owned = owned.insert(Header {
            key: name,
            value: Some(value.as_bytes()),
        });
    }
    let record = FutureRecord::<(), [u8]>::to(topic)
        .payload(body)
        .partition(0)
        .headers(owned);
    producer
        .send(record, Duration::from_secs(10))
        .await
        .unwrap_or_else(|(e, _)| panic!("send to {topic}: {e}"));
}

/// The headers and body of the first record of partition 0 of `topic`,
/// read without a consumer group's commits.
pub async fn first_record(
    topic: &str,
    timeout: Duration,
) -> Option<(Vec<(String, String)>, Vec<u8>)> {
    let topic = topic.to_owned();
    tokio::task::spawn_blocking(move || {
        let consumer: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", kafka_brokers())
            .set("group.id", unique_name("raw-reader"))
            .set("enable.auto.commit", "false")
            .create()
            .expect("consumer");
        let mut list = TopicPartitionList::new();
        list.add_partition_offset(&topic, 0, Offset::Beginning)
            .expect("partition");
        consumer.assign(&list).expect("assign");
        let message = consumer.poll(timeout)?.expect("read");
        let headers = message
            .headers()
            .map(|h| {
                h.iter()
                    .map(|h| {
                        let value = String::from_utf8_lossy(h.value.unwrap_or_default());
                        (h.key.to_owned(), value.into_owned())
                    })
                    .collect()
            })
            .unwrap_or_default();
        Some((headers, message.payload().unwrap_or_default().to_vec()))
    })
    .await
    .expect("reader thread")
}
