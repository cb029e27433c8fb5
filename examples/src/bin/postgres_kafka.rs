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
use std::sync::Arc;

use anyhow::Context;
use tidings::kafka::{
    ClientOptions, KafkaPublisher, KafkaSource, PublisherOptions, SourceOptions, TopicOptions,
    Topology,
};
use tidings::prelude::*;
use tidings_examples::billing::{Billing, OrderPlaced};

static ORDER_EVENTS: OutboxSpec<OrderPlaced> = OutboxSpec::json("order-events")
    .destination("tidings-example-orders")
    .per_key();
static ORDERS: QueueSpec<OrderPlaced> = QueueSpec::json("tidings-example-orders");

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tidings_examples::init_tracing();
    ORDER_EVENTS.check_pair(&ORDERS)?;
    let billing = Billing::open("tidings_example_kafka").await?;
    let store = billing.store();
    let brokers = std::env::var("KAFKA_BROKERS").unwrap_or_else(|_| "127.0.0.1:9092".to_owned());
    let client = ClientOptions::new(brokers.clone()).client_id("tidings-example");
    Topology::new(&client)?
        .create(ORDERS.name(), &TopicOptions::default().partitions(4))
        .await
        .with_context(|| {
            format!("creating the topic on {brokers}; run bash scripts/setup-services.sh")
        })?;

    let publisher = KafkaPublisher::new(&client, PublisherOptions::default())?;
    let relays = store.relays(publisher).route(&ORDER_EVENTS)?;
    let source = KafkaSource::new(&client, SourceOptions::new("billing"))?;
    let inbox = Inbox::new(store.inbox(), "billing")?;
    let consumer = Arc::new(Consumer::new(source, &ORDERS, billing.handler())?.inbox(inbox));
    let plan = LifecyclePlan::new()
        .steps(relays)
        .step("billing", consumer.clone());

    billing.run(plan, &ORDER_EVENTS, || consumer.report()).await
}
