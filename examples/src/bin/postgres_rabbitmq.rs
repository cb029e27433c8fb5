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
//! has its invoice, or non-zero after 30 s.
#![allow(clippy::print_stdout)]

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use tidings::postgres::sqlx::{self, Row, postgres::PgPoolOptions};
use tidings::postgres::{PgContext, PgOutboxOptions, PgOutboxStore, Pooling};
use tidings::prelude::*;
use tidings::rabbitmq::{
    ConnectionOptions, PublisherOptions, QueueOptions, RabbitConnection, SourceOptions,
};

#[derive(Debug, Serialize, Deserialize)]
struct OrderPlaced {
    order_id: i64,
    amount_cents: i64,
}

static ORDER_EVENTS: OutboxSpec<OrderPlaced> = OutboxSpec::json("order-events")
    .to_queue("tidings-example-orders")
    .per_key();
static ORDERS: QueueSpec<OrderPlaced> = QueueSpec::json("tidings-example-orders");

const ORDERS_TO_PLACE: i64 = 20;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tidings_examples::init_tracing();
    ORDER_EVENTS.check_pair(&ORDERS)?;
    let store = open_store().await?;
    let amqp = std::env::var("AMQP_URL")
        .unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".to_owned());

    // The wiring: one AMQP connection, the queue, the consumer and the
    // relay's steps, in one plan.
    let rabbit = RabbitConnection::new(ConnectionOptions::new(&amqp).connection_name("example"));
    let queue = QueueOptions::quorum();
    let declared = rabbit.topology().declare_queue_spec(&ORDERS, queue).await;
    declared.with_context(|| format!("declaring on {amqp}; run scripts/setup-services.sh"))?;
    let source = rabbit.source(SourceOptions::default());
    let inbox = Inbox::new(store.inbox(), "billing")?;
    let billing = Arc::new(Consumer::new(source, &ORDERS, handler_fn(bill))?.inbox(inbox));
    let publisher = rabbit.publisher(PublisherOptions::default());
    let relays = store.relays(publisher).route(&ORDER_EVENTS)?;
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

async fn open_store() -> anyhow::Result<PgOutboxStore> {
    let url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let pool = PgPoolOptions::new()
        .max_connections(8)
        .connect(&url)
        .await
        .with_context(|| format!("connecting to {url}; run bash scripts/setup-services.sh"))?;
    // Statements without parameters go by the simple protocol, which any
    // pooler carries.
    sqlx::raw_sql("drop schema if exists tidings_example_billing cascade")
        .execute(&pool)
        .await?;
    let mut options = PgOutboxOptions::new().schema("tidings_example_billing");
    if std::env::var("DATABASE_POOLING").is_ok_and(|mode| mode == "transaction") {
        options = options.pooling(Pooling::Transaction);
    }
    if let Ok(direct) = std::env::var("DATABASE_LISTEN_URL") {
        options = options.listen_options(direct.parse()?);
    }
    let store = PgOutboxStore::new(pool, options)?;
    store.migrate().await?;
    sqlx::raw_sql(
        "create table tidings_example_billing.orders (id bigserial primary key, amount_cents bigint not null); \
         create table tidings_example_billing.invoices (order_id bigint primary key, amount_cents bigint not null)",
    )
    .execute(store.pool())
    .await?;
    Ok(store)
}

/// Places the orders, each with its event in one transaction; one in five
/// rolls back, taking its event with it. Returns how many committed.
async fn place_orders(store: &PgOutboxStore) -> anyhow::Result<i64> {
    let mut committed = 0;
    for n in 1..=ORDERS_TO_PLACE {
        let amount_cents = 1_000 + n;
        let mut ctx = store.begin().await?;
        // Not prepared by name, so it also passes a transaction pooler.
        let order_id: i64 = sqlx::query_scalar(
            "insert into tidings_example_billing.orders (amount_cents) values ($1) returning id",
        )
        .persistent(false)
        .bind(amount_cents)
        .fetch_one(ctx.tx())
        .await?;
        ctx.outbox()
            .stage(
                &ORDER_EVENTS,
                "order.placed",
                &OrderPlaced {
                    order_id,
                    amount_cents,
                },
            )?
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
        sqlx::query_scalar("select id from tidings_example_billing.orders where id = $1")
            .persistent(false)
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
        "insert into tidings_example_billing.invoices (order_id, amount_cents) values ($1, $2)",
    )
    .persistent(false)
    .bind(order.order_id)
    .bind(order.amount_cents)
    .execute(ctx.tx())
    .await?;
    println!(
        "invoiced order {} for {} cents (event {})",
        order.order_id,
        order.amount_cents,
        msg.event_id()
    );
    Ok(())
}

async fn invoice_count(store: &PgOutboxStore) -> anyhow::Result<i64> {
    let row = sqlx::raw_sql("select count(*) from tidings_example_billing.invoices")
        .fetch_one(store.pool())
        .await?;
    Ok(row.try_get(0)?)
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
