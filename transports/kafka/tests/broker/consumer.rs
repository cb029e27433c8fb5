//! The consumer runner on Kafka with the PostgreSQL inbox: the consumer
//! suite of `tidings-testing`, each case on a topic and a consumer group
//! of its own. One partition keeps the records of a key in order, as the
//! partitioner does for a key on any number of partitions.

use tidings_kafka::{KafkaPublisher, KafkaSource, PublisherOptions};
use tidings_testing::consumer::PgWorld;

use crate::support::{client, create_topic, group};

/// A PostgreSQL schema with the inbox and an effects table, and a topic.
type PgKafka = PgWorld<KafkaPublisher, KafkaSource>;

async fn world() -> PgKafka {
    let topic = create_topic("orders", 1).await;
    let publisher = KafkaPublisher::new(&client(), PublisherOptions::default()).unwrap();
    let source = KafkaSource::new(&client(), group("consumer")).unwrap();
    PgWorld::new("kafka_consumer", topic, publisher, source).await
}

// The suite's shutdown-and-restart case stops the first member 400 ms
// after it subscribed, while it is still joining the group; it leaves in
// about 3 s, and the next member of the group then gets no partition for
// over a minute on the test broker. Stopping members that had joined is
// covered by `restart.rs` and `rebalance.rs`.
tidings_testing::consumer_conformance!(world(); cases:
    a_message_delivered_three_times_has_its_effect_once,
    a_failing_handler_leaves_nothing_and_succeeds_on_redelivery,
    a_permanent_error_parks_at_once_and_leaves_nothing,
    poison_is_parked_and_does_not_block_the_queue,
    per_key_messages_run_one_at_a_time_in_order,
);
