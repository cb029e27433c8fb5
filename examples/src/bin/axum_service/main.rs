//! An order service on axum: `POST /orders` writes the order and stages its
//! `order.placed` event in the same transaction; beside the server, in one
//! lifecycle plan, the relay publishes the events to RabbitMQ and a billing
//! consumer writes one invoice per order through the PostgreSQL inbox.
//! SIGTERM or ctrl-c stops taking requests, lets those in flight finish,
//! then stops the consumer and the relay.
//!
//! ```sh
//! bash scripts/setup-services.sh   # starts PostgreSQL and RabbitMQ if down
//! cargo run -p tidings-examples --features axum --bin axum_service
//! curl -i http://127.0.0.1:3000/orders -H 'content-type: application/json' \
//!     -d '{"customer": "ada", "amount_cents": 1250}'
//! ```
//!
//! A placed order answers `201` with its id; an amount that is not positive
//! answers `422`, and neither the order nor its event is kept.
//!
//! Read from the environment, with local defaults: `DATABASE_URL`,
//! `AMQP_URL`, `LISTEN_ADDR` (`127.0.0.1:3000`; port 0 picks a free one),
//! `ORDERS_SCHEMA` (`tidings_example_axum`, created if missing, holding the
//! outbox, the inbox, `orders` and `invoices`) and `ORDERS_QUEUE`
//! (`tidings-example-axum-orders`, declared with its dead-letter queue).
//! Once it accepts requests it prints `listening on http://<address>`.
//!
//! `examples/tests/axum_service.rs` drives it over HTTP: 200 concurrent
//! orders, one in five rejected, then SIGTERM with a request in flight
//! (`cargo test -p tidings-examples --features axum --test axum_service`).
#![allow(clippy::print_stdout)]

mod billing;
mod orders;
mod server;

use std::sync::LazyLock;

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
use tokio::net::TcpListener;
use tokio::signal::unix::{SignalKind, signal};

use server::HttpServer;

/// The queue the events go to, named by `ORDERS_QUEUE`.
static QUEUE: LazyLock<String> =
    LazyLock::new(|| env_or("ORDERS_QUEUE", "tidings-example-axum-orders"));
static ORDER_EVENTS: LazyLock<OutboxSpec<OrderPlaced>> = LazyLock::new(|| {
    OutboxSpec::json("order-events")
        .destination(&QUEUE)
        .per_key()
});
static ORDERS: LazyLock<QueueSpec<OrderPlaced>> = LazyLock::new(|| QueueSpec::json(&QUEUE));

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tidings_examples::init_tracing();
    ORDER_EVENTS.check_pair(&ORDERS)?;
    let shutdown = shutdown_signal()?;
    let store = open_store().await?;
    let amqp = env_or("AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/%2f");
    let listen = env_or("LISTEN_ADDR", "127.0.0.1:3000");

    // The wiring: one AMQP connection, the queue, the consumer, the
    // relay's steps and the server, in one plan. Steps stop in reverse:
    // the server first, so no new order arrives while the rest drains.
    let rabbit = RabbitConnection::new(ConnectionOptions::new(&amqp).connection_name("orders"));
    let declared = rabbit
        .topology()
        .declare_queue_spec(&ORDERS, QueueOptions::quorum())
        .await;
    declared.with_context(|| format!("declaring on {amqp}; run bash scripts/setup-services.sh"))?;
    let source = rabbit.source(SourceOptions::default());
    let billing = Consumer::new(source, &*ORDERS, handler_fn(billing::bill))?
        .inbox(Inbox::new(store.inbox(), "billing")?);
    let relays = store
        .relays(rabbit.publisher(PublisherOptions::default()))
        .route(&ORDER_EVENTS)?;
    let listener = TcpListener::bind(&listen)
        .await
        .with_context(|| format!("binding {listen}"))?;
    let address = listener.local_addr()?;
    let plan = LifecyclePlan::new()
        .steps(relays)
        .step("billing", billing)
        .step("http", HttpServer::new(listener, orders::router(store))?);

    println!("listening on http://{address}");
    plan.run_until(shutdown).await?;
    tracing::info!("stopped");
    Ok(())
}

/// Opens the pool with `ORDERS_SCHEMA` as its search path, so the
/// service's own statements name their tables plainly, and creates what is
/// missing.
async fn open_store() -> anyhow::Result<PgOutboxStore> {
    let schema = env_or("ORDERS_SCHEMA", "tidings_example_axum");
    let store = store_in_schema(&schema, 10).await?;
    store.migrate().await?;
    sqlx::raw_sql(
        "create table if not exists orders (id bigserial primary key, customer text not null, amount_cents bigint not null); \
         create table if not exists invoices (id bigserial primary key, order_id bigint not null, amount_cents bigint not null)",
    )
    .execute(store.pool())
    .await?;
    Ok(store)
}

/// Completes on the first SIGTERM or SIGINT. Both are caught from here
/// on, so a signal that arrives during start-up is not lost either.
fn shutdown_signal() -> std::io::Result<impl Future<Output = ()>> {
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = terminate.recv() => tracing::info!("SIGTERM: shutting down"),
            _ = interrupt.recv() => tracing::info!("SIGINT: shutting down"),
        }
    })
}
