//! The PostgreSQL → RabbitMQ order service, observed: one OpenTelemetry
//! trace from each order's transaction to the handler that bills it,
//! exported over OTLP, and the relay's, monitor's and consumer's metrics on
//! a Prometheus `/metrics` endpoint.
//!
//! ```sh
//! bash scripts/setup-services.sh   # starts PostgreSQL and RabbitMQ if down
//! cargo run -p tidings-examples --features observability --bin observability
//! ```
//!
//! Traces go to the OTLP/HTTP collector the standard variables name
//! (`OTEL_EXPORTER_OTLP_ENDPOINT`, default `http://localhost:4318`,
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_EXPORTER_OTLP_HEADERS`,
//! `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_BSP_*`);
//! `OTEL_TRACES_EXPORTER=none` turns the export off. Metrics are served on
//! `METRICS_ADDR` (`127.0.0.1:9464`; port 0 picks a free one), for the
//! dashboard in `docs/grafana/tidings.json`. Servers are read from
//! `DATABASE_URL` and `AMQP_URL`; `ORDERS_SCHEMA` and `ORDERS_QUEUE` name
//! the schema and queue it recreates (`tidings_example_observability`,
//! `tidings-example-observability`).
//!
//! It places an order every `ORDER_INTERVAL_MS` (100 ms), one in ten with
//! an amount billing refuses (parked), prints `metrics on
//! http://<address>/metrics` once serving, and runs until Ctrl-C or
//! SIGTERM.
#![allow(clippy::print_stdout)]

mod billing;
mod telemetry;

use std::sync::LazyLock;
use std::time::Duration;

use anyhow::Context;
use tidings::postgres::PgOutboxStore;
use tidings::postgres::sqlx;
use tidings::prelude::*;
use tidings::rabbitmq::{
    ConnectionOptions, PublisherOptions, QueueOptions, RabbitConnection, SourceOptions,
};
use tidings_examples::database::store_in_schema;
use tidings_examples::env_or;
use tidings_examples::orders::OrderPlaced;
use tidings_examples::placing::place_order;
use tokio::net::TcpListener;
use tokio::signal::unix::{SignalKind, signal};
use tracing::Instrument;

static QUEUE: LazyLock<String> =
    LazyLock::new(|| env_or("ORDERS_QUEUE", "tidings-example-observability"));
static ORDER_EVENTS: LazyLock<OutboxSpec<OrderPlaced>> =
    LazyLock::new(|| OutboxSpec::json("order-events").destination(&QUEUE));
static ORDERS: LazyLock<QueueSpec<OrderPlaced>> = LazyLock::new(|| QueueSpec::json(&QUEUE));

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let traces = telemetry::init_tracing()?;
    let metrics = telemetry::prometheus()?;
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    let store = open_store().await?;
    let amqp = env_or("AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/%2f");
    let rabbit =
        RabbitConnection::new(ConnectionOptions::new(&amqp).connection_name("observability"));
    let declared = rabbit
        .topology()
        .declare_queue_spec(&ORDERS, QueueOptions::quorum())
        .await;
    declared.with_context(|| format!("declaring on {amqp}; run bash scripts/setup-services.sh"))?;
    let billing = Consumer::new(
        rabbit.source(SourceOptions::default()),
        &*ORDERS,
        handler_fn(billing::bill),
    )?
    .inbox(Inbox::new(store.inbox(), "billing")?);
    let relays = store
        .relays(rabbit.publisher(PublisherOptions::default()))
        .route(&ORDER_EVENTS)?;
    let plan = LifecyclePlan::new().steps(relays).step("billing", billing);

    let listen = env_or("METRICS_ADDR", "127.0.0.1:9464");
    let listener = TcpListener::bind(&listen)
        .await
        .with_context(|| format!("binding {listen}"))?;
    println!("metrics on http://{}/metrics", listener.local_addr()?);
    let server = tokio::spawn(telemetry::serve_metrics(listener, metrics));

    let interval = env_or("ORDER_INTERVAL_MS", "100")
        .parse()
        .context("ORDER_INTERVAL_MS")?;
    plan.run_until(async {
        tokio::select! {
            result = place_orders(&store, Duration::from_millis(interval)) => {
                tracing::error!(error = ?result, "placing orders stopped");
            }
            _ = terminate.recv() => {}
            _ = interrupt.recv() => {}
        }
    })
    .await?;
    server.abort();
    traces.shutdown();
    Ok(())
}

/// Places an order and stages its event in one transaction, each in a
/// trace of its own, until an order fails.
async fn place_orders(store: &PgOutboxStore, every: Duration) -> anyhow::Result<()> {
    let mut ticks = tokio::time::interval(every);
    for n in 1_i64.. {
        ticks.tick().await;
        let amount_cents = if n % 10 == 0 { -n } else { 1_000 + n };
        let span = tracing::info_span!("place_order", order.amount_cents = amount_cents);
        async {
            let mut ctx = store.begin().await?;
            let insert = "insert into orders (amount_cents) values ($1) returning id";
            place_order(&mut ctx, insert, &ORDER_EVENTS, amount_cents).await?;
            ctx.commit().await?;
            anyhow::Ok(())
        }
        .instrument(span)
        .await?;
    }
    Ok(())
}

/// Recreates `ORDERS_SCHEMA` with the outbox, the inbox, `orders` and
/// `invoices`, on a pool whose search path is that schema.
async fn open_store() -> anyhow::Result<PgOutboxStore> {
    let schema = env_or("ORDERS_SCHEMA", "tidings_example_observability");
    let store = store_in_schema(&schema, 8).await?;
    let recreate = format!("drop schema if exists \"{schema}\" cascade");
    sqlx::raw_sql(sqlx::AssertSqlSafe(recreate))
        .execute(store.pool())
        .await?;
    store.migrate().await?;
    sqlx::raw_sql(
        "create table orders (id bigserial primary key, amount_cents bigint not null); \
         create table invoices (order_id bigint primary key, amount_cents bigint not null)",
    )
    .execute(store.pool())
    .await?;
    Ok(store)
}
