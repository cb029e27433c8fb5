//! The order service on PostgreSQL: each order and its `order.placed` event
//! commit together, and a relay prints every event it publishes.
//!
//! ```sh
//! bash scripts/setup-services.sh   # starts PostgreSQL if it is down
//! cargo run -p tidings-examples --features postgres --bin postgres_outbox
//! ```
//!
//! The server is read from `DATABASE_URL` (default
//! `postgres://postgres@127.0.0.1:5432/test`); the program works in the
//! schema `tidings_example`, which it creates. It runs the relay (woken by
//! LISTEN/NOTIFY, with a 10 s polling floor, sweeping its own route) and
//! the listener as lifecycle steps, places 20 orders meanwhile, one in five
//! rolled back, and exits once every committed order's event has been
//! published, or non-zero after 30 s.
#![allow(clippy::print_stdout)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use anyhow::{Context, bail};
use sqlx::postgres::PgPoolOptions;
use tidings_core::lifecycle::LifecyclePlan;
use tidings_core::relay::{Relay, RelayOptions};
use tidings_core::{OutboxSpec, OutboxStore, PublishBatch, PublishError, Publisher, Wakeup};
use tidings_examples::orders::{OrderPlaced, run_while_placing};
use tidings_examples::placing::place_orders;
use tidings_postgres::{PgOutboxOptions, PgOutboxStore};

static ORDER_EVENTS: OutboxSpec<OrderPlaced> = OutboxSpec::json("order-events")
    .destination("orders")
    .per_key();

const SCHEMA: &str = "tidings_example";

const INSERT_ORDER: &str =
    "insert into tidings_example.orders (amount_cents) values ($1) returning id";

/// A stand-in broker: prints each event and counts it as accepted.
#[derive(Debug, Clone, Default)]
struct PrintingPublisher {
    published: Arc<AtomicU64>,
}

impl Publisher for PrintingPublisher {
    async fn send(&self, batch: PublishBatch<'_>) -> Vec<Result<(), PublishError>> {
        batch
            .each(|envelope| async move {
                println!(
                    "published {} {} to {} (key {}): {}",
                    envelope.event_type,
                    envelope.event_id,
                    envelope.destination,
                    envelope.ordering_key.as_deref().unwrap_or("-"),
                    String::from_utf8_lossy(&envelope.payload),
                );
                self.published.fetch_add(1, Relaxed);
                Ok(())
            })
            .await
    }

    fn messaging_system(&self) -> &'static str {
        "stdout"
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tidings_examples::init_tracing();
    let url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let pool = PgPoolOptions::new()
        .max_connections(5)
        .connect(&url)
        .await
        .with_context(|| format!("connecting to {url}; run bash scripts/setup-services.sh"))?;
    let store = PgOutboxStore::new(pool, PgOutboxOptions::new().schema(SCHEMA))?;
    store.migrate().await?;
    sqlx::query(
        "create table if not exists tidings_example.orders \
         (id bigserial primary key, amount_cents bigint not null)",
    )
    .execute(store.pool())
    .await?;

    let publisher = PrintingPublisher::default();
    let wakeup = Wakeup::new();
    let relay = Relay::new(store.clone(), publisher.clone(), &ORDER_EVENTS)?
        .options(RelayOptions::default().poll_interval(Duration::from_secs(10)))
        .wakeup(wakeup.clone());
    let plan = LifecyclePlan::new()
        .step("wakeup source", store.wakeup_source(wakeup))
        .step("relay", relay);

    // Orders are placed while the plan runs: with a 10 s polling floor,
    // each is relayed within milliseconds because its commit NOTIFYs the
    // listener.
    let published = || publisher.published.load(Relaxed);
    let placing = place_orders(
        &store,
        INSERT_ORDER,
        &ORDER_EVENTS,
        Duration::from_millis(50),
    );
    let committed = run_while_placing(plan, placing, |committed| async move {
        published() >= committed
    })
    .await?;

    let published = published();
    let stats = store.stats(ORDER_EVENTS.name()).await?;
    println!("orders committed: {committed}, events published: {published}");
    if published < committed || stats.pending + stats.in_flight > 0 {
        bail!(
            "{} events were not published in time",
            committed - published.min(committed)
        );
    }
    Ok(())
}
