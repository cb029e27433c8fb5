//! Shared set-up of the integration tests: unique topics on the local
//! Kafka-protocol broker, deleted afterwards, and a unique consumer group
//! per source.

#![allow(dead_code, unreachable_pub)]

pub mod e2e;
pub mod foreign;
pub mod private;
pub mod secure;

use std::time::Duration;

use tidings_kafka::{
    ClientOptions, KafkaPublisher, KafkaSource, PublisherOptions, SourceOptions, TopicOptions,
    Topology, dead_letter_topic,
};
use tidings_testing::broker::{BrokerFixture, BrokerHarness};
use tidings_testing::names::unique_name;
use tidings_testing::services::{expect_listening, kafka_brokers};

/// How long a test waits for a delivery before failing.
pub const WAIT: Duration = Duration::from_secs(20);

/// Client options for the test broker; fails the test with the setup
/// command when nothing listens there.
pub fn client() -> ClientOptions {
    let brokers = kafka_brokers();
    let first = brokers.split(',').next().unwrap_or_default();
    expect_listening("Kafka", &format!("kafka://{first}"));
    ClientOptions::new(brokers).client_id(unique_name("tidings-test"))
}

/// A publisher on the test broker, with the default options.
pub fn publisher() -> KafkaPublisher {
    KafkaPublisher::new(&client(), PublisherOptions::default()).expect("publisher")
}

/// Source options for a consumer group no other test uses, committing and
/// rebalancing quickly.
pub fn group(prefix: &str) -> SourceOptions {
    SourceOptions::new(unique_name(prefix))
        .commit_interval(Duration::from_millis(50))
        .session_timeout(Duration::from_secs(6))
}

/// Creates a fresh topic (with its retry and dead-letter topics).
pub async fn create_topic(prefix: &str, partitions: i32) -> String {
    let topic = unique_name(prefix);
    let topology = Topology::new(&client()).expect("admin client");
    topology
        .create(&topic, &TopicOptions::default().partitions(partitions))
        .await
        .unwrap_or_else(|e| panic!("create topic {topic}: {e:?}"));
    topic
}

/// The conformance harness: one topic per case, one partition, and a
/// consumer group of its own.
///
/// Topics are left in place: deleting topics on Tansu while other clients
/// of the process run crashed librdkafka in its metadata cache, and the
/// test broker keeps its topics in memory only.
#[derive(Default)]
pub struct Kafka;

impl BrokerHarness for Kafka {
    type Publisher = KafkaPublisher;
    type Source = KafkaSource;

    async fn fixture(&self) -> BrokerFixture<KafkaPublisher, KafkaSource> {
        let topic = create_topic("conf", 1).await;
        let publisher =
            KafkaPublisher::new(&client(), PublisherOptions::default()).expect("publisher");
        let source = KafkaSource::new(&client(), group("conf")).expect("source");
        BrokerFixture {
            publisher,
            source,
            dead_letter_queue: dead_letter_topic(&topic),
            queue: topic,
        }
    }
}

/// Every record of `topic` (with `partitions` partitions), as partition
/// and headers, in offset order per partition; waits for `count` of them.
pub async fn read_all(
    topic: &str,
    partitions: i32,
    count: usize,
) -> Vec<(i32, std::collections::HashMap<String, String>)> {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::message::Headers;
    use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};
    let topic = topic.to_owned();
    tokio::task::spawn_blocking(move || {
        let consumer: BaseConsumer = ClientConfig::new()
            .set(
                "bootstrap.servers",
                tidings_testing::services::kafka_brokers(),
            )
            .set("group.id", unique_name("raw-reader"))
            .set("enable.auto.commit", "false")
            .create()
            .expect("consumer");
        let mut list = TopicPartitionList::new();
        for p in 0..partitions {
            list.add_partition_offset(&topic, p, Offset::Beginning)
                .unwrap();
        }
        consumer.assign(&list).expect("assign");
        let mut records = Vec::new();
        let deadline = std::time::Instant::now() + WAIT;
        while records.len() < count && std::time::Instant::now() < deadline {
            let Some(message) = consumer.poll(Duration::from_millis(200)) else {
                continue;
            };
            let message = message.expect("read");
            let headers = message
                .headers()
                .map(|h| {
                    h.iter()
                        .map(|h| {
                            (
                                h.key.to_owned(),
                                String::from_utf8_lossy(h.value.unwrap_or_default()).into_owned(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            records.push((message.partition(), headers));
        }
        assert_eq!(records.len(), count, "records read from {topic}");
        records
    })
    .await
    .expect("reader thread")
}
