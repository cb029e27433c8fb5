//! The order service end to end: orders and their events commit together
//! in PostgreSQL, the relay publishes the events to RabbitMQ, and a billing
//! consumer writes one invoice per order through the PostgreSQL inbox.
//!
//! ```sh
//! bash scripts/setup-services.sh   # starts PostgreSQL and RabbitMQ if down
//! cargo run -p tidings-examples --features postgres,rabbitmq --bin postgres_rabbitmq
//! ```
//!
//! Servers are read from `DATABASE_URL` and `AMQP_URL` (local defaults).
//! Behind a transaction pooler such as PgBouncer, also set
//! `DATABASE_POOLING=transaction`, and `DATABASE_LISTEN_URL` to the server's
//! own address so the relay hears commits at once:
//!
//! ```sh
//! DATABASE_URL=postgres://postgres@127.0.0.1:6432/test DATABASE_POOLING=transaction \
//! DATABASE_LISTEN_URL=postgres://postgres@127.0.0.1:5432/test \
//!     cargo run -p tidings-examples --features postgres,rabbitmq --bin postgres_rabbitmq
//! ```
//!
//! The program recreates the schema `tidings_example_billing`, declares the
//! queue `tidings-example-orders` with its dead-letter queue, places 20
//! orders (one in five rolled back), and exits once every committed order
//! has its invoice, or non-zero after 30 s. The billing service itself
//! (orders, events, invoices) is `tidings_examples::billing`.

use anyhow::Context;
use tidings::rabbitmq::{
    ConnectionOptions, PublisherOptions, QueueOptions, RabbitConnection, SourceOptions,
};
use tidings_examples::billing::{Billing, ORDER_EVENTS, ORDERS};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tidings_examples::init_tracing();
    let billing = Billing::open("tidings_example_billing").await?;
    let amqp = std::env::var("AMQP_URL")
        .unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".to_owned());

    // The wiring: one AMQP connection for the queue, the consumer's source
    // and the relays' publisher.
    let rabbit = RabbitConnection::new(ConnectionOptions::new(&amqp).connection_name("example"));
    let queue = QueueOptions::quorum();
    let declared = rabbit.topology().declare_queue_spec(&ORDERS, queue).await;
    declared.with_context(|| format!("declaring on {amqp}; run scripts/setup-services.sh"))?;
    let source = rabbit.source(SourceOptions::default());
    let publisher = rabbit.publisher(PublisherOptions::default());
    billing.run(publisher, source, &ORDER_EVENTS, &ORDERS).await
}
