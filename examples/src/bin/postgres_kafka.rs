//! The order service end to end over Kafka: orders and their events commit
//! together in PostgreSQL, the relay publishes the events to a Kafka topic
//! (each customer's events in one partition, in order), and a billing
//! consumer group writes one invoice per order through the PostgreSQL
//! inbox.
//!
//! ```sh
//! bash scripts/setup-services.sh   # starts PostgreSQL and a Kafka broker if down
//! cargo run -p tidings-examples --features postgres,kafka --bin postgres_kafka
//! ```
//!
//! Servers are read from `DATABASE_URL` and `KAFKA_BROKERS` (local
//! defaults). The program recreates the schema `tidings_example_kafka`,
//! creates the topic `tidings-example-orders` with its retry and
//! dead-letter topics (4 partitions each) unless they exist, places 20
//! orders (one in five rolled back), and exits once every committed order
//! has its invoice, or non-zero after 30 s. The consumer group `billing`
//! commits its offsets, so a second run reads only its own events. The
//! billing service itself is `tidings_examples::billing`.
use anyhow::Context;
use tidings::kafka::{
    ClientOptions, KafkaPublisher, KafkaSource, PublisherOptions, SourceOptions, TopicOptions,
    Topology,
};
use tidings_examples::billing::{Billing, ORDER_EVENTS, ORDERS};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tidings_examples::init_tracing();
    let billing = Billing::open("tidings_example_kafka").await?;
    let brokers = std::env::var("KAFKA_BROKERS").unwrap_or_else(|_| "127.0.0.1:9092".to_owned());
    let client = ClientOptions::new(brokers.clone()).client_id("tidings-example");
    Topology::new(&client)?
        .create(ORDERS.name(), &TopicOptions::default().partitions(4))
        .await
        .with_context(|| {
            format!("creating the topic on {brokers}; run bash scripts/setup-services.sh")
        })?;

    // Each customer's events go to one partition, in order; the consumer
    // group `billing` reads them.
    let publisher = KafkaPublisher::new(&client, PublisherOptions::default())?;
    let source = KafkaSource::new(&client, SourceOptions::new("billing"))?;
    billing.run(publisher, source, &ORDER_EVENTS, &ORDERS).await
}
