//! The order service on PostgreSQL and SQS: orders and their events commit
//! together in PostgreSQL, the relay publishes the events to an SQS FIFO
//! queue (one message group per customer), and a billing consumer writes
//! one invoice per order through the PostgreSQL inbox.
//!
//! ```sh
//! bash scripts/setup-services.sh   # starts PostgreSQL and the SQS stand-in if down
//! cargo run -p tidings-examples --features postgres,sqs --bin postgres_sqs
//! ```
//!
//! Servers are read from `DATABASE_URL` and `SQS_ENDPOINT` (local defaults;
//! the SQS client uses region `us-east-1` and the credentials `test`/`test`
//! a local stand-in accepts). The program recreates the schema
//! `tidings_example_sqs`, creates the FIFO queue
//! `tidings-example-orders.fifo` with its dead-letter queue and empties
//! both, places 20 orders (one in five rolled back), and exits once every
//! committed order has its invoice, or non-zero after 30 s. The billing
//! service itself is `tidings_examples::billing`.
use anyhow::Context;
use tidings::prelude::*;
use tidings::sqs::aws_sdk_sqs::Client;
use tidings::sqs::{
    PublisherOptions, QueueOptions, SourceOptions, SqsPublisher, SqsSource, Topology,
    dead_letter_queue, local_client,
};
use tidings_examples::billing::Billing;
use tidings_examples::orders::OrderPlaced;

// A FIFO queue's name ends in `.fifo`, so this service's route and queue
// are its own: one message group per customer.
static ORDER_EVENTS: OutboxSpec<OrderPlaced> = OutboxSpec::json("order-events")
    .destination("tidings-example-orders.fifo")
    .per_key();
static ORDERS: QueueSpec<OrderPlaced> = QueueSpec::json("tidings-example-orders.fifo");

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tidings_examples::init_tracing();
    let billing = Billing::open("tidings_example_sqs").await?;
    let endpoint =
        std::env::var("SQS_ENDPOINT").unwrap_or_else(|_| "http://127.0.0.1:4566".to_owned());
    let client = local_client(&endpoint);
    Topology::new(client.clone())
        .declare_queue(ORDERS.name(), QueueOptions::default().max_receive_count(5))
        .await
        .with_context(|| {
            format!("creating the queue on {endpoint}; run bash scripts/setup-services.sh")
        })?;
    empty_queues(&client).await;

    let publisher = SqsPublisher::new(client.clone(), PublisherOptions::default());
    let source = SqsSource::new(client, SourceOptions::default());
    billing.run(publisher, source, &ORDER_EVENTS, &ORDERS).await
}

/// Drops what earlier runs left in the queues: their orders are gone with
/// the schema. SQS allows one purge a minute, so a refused purge is only
/// logged.
async fn empty_queues(client: &Client) {
    for queue in [ORDERS.name().to_owned(), dead_letter_queue(ORDERS.name())] {
        let purged = async {
            let url = client.get_queue_url().queue_name(&queue).send().await?;
            let url = url.queue_url().unwrap_or_default();
            client.purge_queue().queue_url(url).send().await?;
            anyhow::Ok(())
        };
        if let Err(error) = purged.await {
            tracing::warn!(
                queue,
                error = format!("{error:#}"),
                "cannot empty the queue"
            );
        }
    }
}
