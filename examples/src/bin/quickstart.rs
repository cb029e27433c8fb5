//! An order service in one process on the in-memory backend.
//!
//! ```sh
//! cargo run -p tidings-examples --bin quickstart
//! ```
//!
//! It places 1,000 orders; each transaction writes the order and stages an
//! `order.placed` event, and one in twenty rolls back. The relay and a
//! shipping consumer run as lifecycle steps. The broker duplicates every
//! tenth message on purpose; the consumer's inbox skips the copies. The
//! program prints a summary and exits non-zero if the numbers do not add up.
#![allow(clippy::print_stdout)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use anyhow::bail;
use serde::{Deserialize, Serialize};
use tidings_consumer::{Consumer, ConsumerReport, HandlerError, TxHandle, handler_fn};
use tidings_core::lifecycle::LifecyclePlan;
use tidings_core::memory::{
    MemoryBroker, MemoryBrokerOptions, MemoryContext, MemoryStore, MemoryStoreOptions, Retention,
};
use tidings_core::relay::{Relay, RelayOptions};
use tidings_core::{Message, OutboxSpec, OutboxStore, QueueSpec};
use tidings_inbox::Inbox;

/// The event, shared by producer and consumer.
#[derive(Debug, Serialize, Deserialize)]
struct OrderPlaced {
    order_id: u64,
    amount_cents: u64,
}

static ORDER_EVENTS: OutboxSpec<OrderPlaced> = OutboxSpec::json("order-events")
    .destination("orders")
    .per_key();
static ORDERS: QueueSpec<OrderPlaced> = QueueSpec::json("orders");

const ORDERS_TO_PLACE: u64 = 1_000;

#[derive(Debug, Default)]
struct Counters {
    committed: AtomicU64,
    rolled_back: AtomicU64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tidings_examples::init_tracing();
    ORDER_EVENTS.check_pair(&ORDERS)?;
    let store = MemoryStore::with_options(MemoryStoreOptions::new().retention(Retention::Keep));
    let broker = MemoryBroker::with_options(MemoryBrokerOptions::default().duplicate_every(10));
    broker.declare_queue(ORDERS.name());
    let counters = Arc::new(Counters::default());

    let relay = Relay::new(store.clone(), broker.clone(), &ORDER_EVENTS)?
        .options(RelayOptions::default().poll_interval(Duration::from_millis(200)))
        .wakeup(store.wakeup());
    let inbox = Inbox::new(store.clone(), "shipping")?;
    let consumer = Arc::new(Consumer::new(broker.clone(), &ORDERS, handler_fn(ship))?.inbox(inbox));
    let plan = LifecyclePlan::new()
        .step("relay", relay)
        .step("shipping", consumer.clone());

    let work = place_orders(store.clone(), counters.clone());
    plan.run_until(async {
        if let Err(e) = work.await {
            tracing::error!(error = %e, "placing orders failed");
        }
        wait_until_settled(&counters, || consumer.report()).await;
    })
    .await?;

    let published = store.stats(ORDER_EVENTS.name()).await?.published;
    report(&store, &counters, &consumer.report(), published)
}

/// Places the orders: each in its own transaction, one in twenty rolled
/// back.
async fn place_orders(store: MemoryStore, counters: Arc<Counters>) -> anyhow::Result<()> {
    for order_id in 1..=ORDERS_TO_PLACE {
        let mut ctx = store.begin();
        ctx.insert("orders", order_id.to_string(), "placed");
        let event = OrderPlaced {
            order_id,
            amount_cents: 1_000 + order_id,
        };
        ctx.outbox()
            .stage(&ORDER_EVENTS, "order.placed", &event)?
            .ordering_key(format!("customer-{}", order_id % 37));
        if order_id % 20 == 7 {
            ctx.rollback();
            counters.rolled_back.fetch_add(1, Relaxed);
        } else {
            ctx.commit()?;
            counters.committed.fetch_add(1, Relaxed);
        }
        if order_id % 100 == 0 {
            tokio::task::yield_now().await;
        }
    }
    Ok(())
}

/// The shipping handler: its write commits with the inbox mark; the
/// runner skips duplicates before it is called.
async fn ship(
    order: Message<OrderPlaced>,
    tx: TxHandle<MemoryContext>,
) -> Result<(), HandlerError> {
    let id = order.payload.order_id.to_string();
    tx.lock().await.insert("shipments", id, "shipped");
    Ok(())
}

/// Waits until every committed order has been handled, for at most 30 s.
async fn wait_until_settled(counters: &Counters, consumed: impl Fn() -> ConsumerReport) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while consumed().processed < counters.committed.load(Relaxed) {
        if tokio::time::Instant::now() > deadline {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Give duplicates behind the last original a moment to arrive.
    tokio::time::sleep(Duration::from_millis(200)).await;
}

fn report(
    store: &MemoryStore,
    counters: &Counters,
    consumed: &ConsumerReport,
    published: u64,
) -> anyhow::Result<()> {
    let committed = counters.committed.load(Relaxed);
    let rolled_back = counters.rolled_back.load(Relaxed);
    let handled = consumed.processed;
    let duplicates = consumed.duplicates;
    let shipments = store.table("shipments");
    println!("orders committed:      {committed}");
    println!("orders rolled back:    {rolled_back}");
    println!("events published:      {published}");
    println!("events handled:        {handled}");
    println!("duplicates skipped:    {duplicates}");

    let shipped_rolled_back = shipments
        .iter()
        .filter_map(|(id, _)| id.parse::<u64>().ok())
        .filter(|id| id % 20 == 7)
        .count();
    let checks = [
        (
            committed + rolled_back == ORDERS_TO_PLACE,
            "every order committed or rolled back",
        ),
        (
            published == committed,
            "every committed order published exactly once",
        ),
        (
            handled == committed,
            "every published event handled exactly once",
        ),
        (
            shipments.len() as u64 == committed,
            "one shipment per committed order",
        ),
        (
            shipped_rolled_back == 0,
            "no event of a rolled-back order escaped",
        ),
        (
            duplicates > 0,
            "the broker's duplicates reached the inbox and were skipped",
        ),
        (
            store.table("orders").len() as u64 == committed,
            "only committed orders stored",
        ),
    ];
    let failed: Vec<_> = checks
        .iter()
        .filter(|(ok, _)| !ok)
        .map(|(_, what)| *what)
        .collect();
    if !failed.is_empty() {
        bail!("the numbers do not add up: {}", failed.join("; "));
    }
    println!("all checks passed");
    Ok(())
}
