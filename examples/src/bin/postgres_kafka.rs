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
//! commits its offsets, so a second run reads only its own events.
#![allow(clippy::print_stdout)]

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use sqlx::postgres::PgPoolOptions;
use tidings_consumer::{Consumer, ConsumerOptions, HandlerError, TxHandle, handler_fn};
use tidings_core::lifecycle::LifecyclePlan;
use tidings_core::relay::Relay;
use tidings_core::{Message, OutboxSpec, QueueSpec, Wakeup};
use tidings_inbox::Inbox;
use tidings_kafka::{
    ClientOptions, KafkaPublisher, KafkaSource, PublisherOptions, SourceOptions, TopicOptions,
    Topology,
};
use tidings_postgres::{PgContext, PgOutboxOptions, PgOutboxStore};

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
    let brokers = std::env::var("KAFKA_BROKERS").unwrap_or_else(|_| "127.0.0.1:9092".to_owned());
    let client = ClientOptions::new(brokers.clone()).client_id("tidings-example");
    Topology::new(&client)?
        .create(ORDERS.name(), &TopicOptions::default().partitions(4))
        .await
        .with_context(|| {
            format!("creating the topic on {brokers}; run bash scripts/setup-services.sh")
        })?;

    let wakeup = Wakeup::new();
    let publisher = KafkaPublisher::new(&client, PublisherOptions::default())?;
    let relay = Relay::new(store.clone(), publisher, &ORDER_EVENTS)?.wakeup(wakeup.clone());
    let source = KafkaSource::new(&client, SourceOptions::new("billing"))?;
    let billing = Arc::new(
        Consumer::new(source, &ORDERS, handler_fn(bill))?
            .inbox(Inbox::new(store.inbox(), "billing")?)
            .options(ConsumerOptions::default().max_deliveries(5)),
    );
    let plan = LifecyclePlan::new()
        .step("listener", store.listener(wakeup))
        .step("relay", relay)
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
    sqlx::query("drop schema if exists tidings_example_kafka cascade")
        .execute(&pool)
        .await?;
    let store = PgOutboxStore::new(pool, PgOutboxOptions::new().schema("tidings_example_kafka"))?;
    store.migrate().await?;
    for ddl in [
        "create table tidings_example_kafka.orders (id bigserial primary key, amount_cents bigint not null)",
        "create table tidings_example_kafka.invoices (order_id bigint primary key, amount_cents bigint not null)",
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
            "insert into tidings_example_kafka.orders (amount_cents) values ($1) returning id",
        )
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
        sqlx::query_scalar("select id from tidings_example_kafka.orders where id = $1")
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
        "insert into tidings_example_kafka.invoices (order_id, amount_cents) values ($1, $2)",
    )
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
    Ok(
        sqlx::query_scalar("select count(*) from tidings_example_kafka.invoices")
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
