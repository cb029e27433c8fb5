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
//! committed order has its invoice, or non-zero after 30 s.
#![allow(clippy::print_stdout)]

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use sqlx::postgres::PgPoolOptions;
use tidings_consumer::{Consumer, HandlerError, TxHandle, handler_fn};
use tidings_core::lifecycle::LifecyclePlan;
use tidings_core::{Message, OutboxSpec, QueueSpec};
use tidings_inbox::Inbox;
use tidings_postgres::{PgContext, PgOutboxOptions, PgOutboxStore};
use tidings_sqs::aws_sdk_sqs::Client;
use tidings_sqs::{
    PublisherOptions, QueueOptions, SourceOptions, SqsPublisher, SqsSource, Topology,
    dead_letter_queue, local_client,
};

#[derive(Debug, Serialize, Deserialize)]
struct OrderPlaced {
    order_id: i64,
    amount_cents: i64,
}

static ORDER_EVENTS: OutboxSpec<OrderPlaced> = OutboxSpec::json("order-events")
    .to_queue("tidings-example-orders.fifo")
    .per_key();
static ORDERS: QueueSpec<OrderPlaced> = QueueSpec::json("tidings-example-orders.fifo");

const SCHEMA: &str = "tidings_example_sqs";
const ORDERS_TO_PLACE: i64 = 20;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tidings_examples::init_tracing();
    ORDER_EVENTS.check_pair(&ORDERS)?;
    let store = open_store().await?;
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
    let relays = store.relays(publisher).route(&ORDER_EVENTS)?;
    let source = SqsSource::new(client, SourceOptions::default());
    let billing = Arc::new(
        Consumer::new(source, &ORDERS, handler_fn(bill))?
            .inbox(Inbox::new(store.inbox(), "billing")?),
    );
    let plan = LifecyclePlan::new()
        .steps(relays)
        .step("billing", billing.clone());

    let mut outcome = None;
    plan.run_until(async {
        let placed = place_orders(&store).await;
        if let Ok(committed) = placed {
            wait_for_invoices(&store, committed).await;
        }
        outcome = Some(placed);
    })
    .await?;
    let committed = outcome.context("the plan stopped before the orders were placed")??;

    let invoices = invoice_count(&store).await?;
    let report = billing.report();
    println!("orders committed: {committed}, invoices written: {invoices}");
    println!(
        "consumer: {} processed, {} duplicates skipped, {} parked",
        report.processed, report.duplicates, report.parked
    );
    if invoices != committed {
        bail!("{committed} orders committed but {invoices} invoices written");
    }
    Ok(())
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

async fn open_store() -> anyhow::Result<PgOutboxStore> {
    let url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let pool = PgPoolOptions::new()
        .max_connections(8)
        .connect(&url)
        .await
        .with_context(|| format!("connecting to {url}; run bash scripts/setup-services.sh"))?;
    sqlx::query("drop schema if exists tidings_example_sqs cascade")
        .execute(&pool)
        .await?;
    let store = PgOutboxStore::new(pool, PgOutboxOptions::new().schema(SCHEMA))?;
    store.migrate().await?;
    for ddl in [
        "create table tidings_example_sqs.orders (id bigserial primary key, amount_cents bigint not null)",
        "create table tidings_example_sqs.invoices (order_id bigint primary key, amount_cents bigint not null)",
    ] {
        sqlx::query(ddl).execute(store.pool()).await?;
    }
    Ok(store)
}

/// Places the orders, each with its event in one transaction; one in five
/// rolls back, taking its event with it. Returns how many committed.
async fn place_orders(store: &PgOutboxStore) -> anyhow::Result<i64> {
    let mut committed = 0;
    for n in 1..=ORDERS_TO_PLACE {
        let amount_cents = 1_000 + n;
        let mut ctx = store.begin().await?;
        let order_id: i64 = sqlx::query_scalar(
            "insert into tidings_example_sqs.orders (amount_cents) values ($1) returning id",
        )
        .bind(amount_cents)
        .fetch_one(ctx.tx())
        .await?;
        let event = OrderPlaced {
            order_id,
            amount_cents,
        };
        // The ordering key becomes the FIFO message group: one customer's
        // events arrive in order.
        ctx.outbox()
            .stage(&ORDER_EVENTS, "order.placed", &event)?
            .ordering_key(format!("customer-{}", n % 3));
        if n % 5 == 0 {
            ctx.rollback().await?;
        } else {
            ctx.commit().await?;
            committed += 1;
        }
    }
    Ok(committed)
}

/// The billing handler: the invoice commits with the inbox mark. An event
/// for an order this database does not know can never succeed.
async fn bill(
    msg: Message<OrderPlaced>,
    tx: TxHandle<PgContext<'static>>,
) -> Result<(), HandlerError> {
    let order = &msg.payload;
    let mut ctx = tx.lock().await;
    let known: Option<i64> =
        sqlx::query_scalar("select id from tidings_example_sqs.orders where id = $1")
            .bind(order.order_id)
            .fetch_optional(ctx.tx())
            .await?;
    if known.is_none() {
        return Err(HandlerError::permanent(format!(
            "unknown order {}",
            order.order_id
        )));
    }
    sqlx::query(
        "insert into tidings_example_sqs.invoices (order_id, amount_cents) values ($1, $2)",
    )
    .bind(order.order_id)
    .bind(order.amount_cents)
    .execute(ctx.tx())
    .await?;
    println!(
        "invoiced order {} for {} cents (event {}, delivery {})",
        order.order_id,
        order.amount_cents,
        msg.event_id(),
        msg.delivery_count.unwrap_or(1)
    );
    Ok(())
}

async fn invoice_count(store: &PgOutboxStore) -> anyhow::Result<i64> {
    Ok(
        sqlx::query_scalar("select count(*) from tidings_example_sqs.invoices")
            .fetch_one(store.pool())
            .await?,
    )
}

/// Returns once `expected` invoices exist, or after 30 s.
async fn wait_for_invoices(store: &PgOutboxStore, expected: i64) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while tokio::time::Instant::now() < deadline {
        if invoice_count(store).await.is_ok_and(|n| n >= expected) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
