//! The order service on MongoDB: each order and its `order.placed` event
//! commit together in one session transaction, the relay publishes the
//! events to an in-memory broker that delivers some twice, and a billing
//! consumer writes one invoice per order through the MongoDB inbox.
//!
//! ```sh
//! bash scripts/setup-services.sh   # starts the MongoDB stand-in if down
//! cargo run -p tidings-examples --features mongo --bin mongo_outbox
//! ```
//!
//! The server is read from `MONGODB_URL` (default
//! `mongodb://127.0.0.1:27017/?replicaSet=secantus`); the program recreates
//! the database `tidings_example`. It runs the change-stream watcher, the
//! relay (with a 10 s polling floor, sweeping expired leases itself) and the
//! consumer as lifecycle steps, places 20 orders (one in five rolled back), and exits
//! once every committed order has exactly one invoice, or non-zero after
//! 30 s.
#![allow(clippy::print_stdout)]

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use futures::FutureExt;
use tidings_consumer::{Consumer, HandlerError, TxHandle, handler_fn};
use tidings_core::lifecycle::LifecyclePlan;
use tidings_core::memory::{MemoryBroker, MemoryBrokerOptions};
use tidings_core::relay::RelayOptions;
use tidings_core::{Message, OutboxSpec, QueueSpec};
use tidings_examples::orders::{
    ORDERS_TO_PLACE, OrderPlaced, check_invoices, print_invoice, run_while_placing,
};
use tidings_inbox::Inbox;
use tidings_mongo::mongodb::bson::{Document, doc};
use tidings_mongo::mongodb::{Client, Collection};
use tidings_mongo::{CommitError, MongoContext, MongoOutboxOptions, MongoOutboxStore};

static ORDER_EVENTS: OutboxSpec<OrderPlaced> = OutboxSpec::json("order-events")
    .destination("orders")
    .per_key();
static ORDERS: QueueSpec<OrderPlaced> = QueueSpec::json("orders");

const DATABASE: &str = "tidings_example";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tidings_examples::init_tracing();
    ORDER_EVENTS.check_pair(&ORDERS)?;
    let store = open_store().await?;

    // Every third message is delivered twice, as at-least-once brokers do.
    let broker = MemoryBroker::with_options(MemoryBrokerOptions::default().duplicate_every(3));
    broker.declare_queue(ORDERS.name());
    let relays = store
        .relays(broker.clone())
        .options(RelayOptions::default().poll_interval(Duration::from_secs(10)))
        .route(&ORDER_EVENTS)?;
    let billing = Arc::new(
        Consumer::new(broker.clone(), &ORDERS, handler_fn(bill))?
            .inbox(Inbox::new(store.inbox(), "billing")?),
    );
    let plan = LifecyclePlan::new()
        .steps(relays)
        .step("billing", billing.clone());

    let written = invoices(&store);
    let committed = run_while_placing(plan, place_orders(&store), |committed| {
        let count = written.count_documents(doc! {});
        async move { count.await.is_ok_and(|n| n >= committed) }
    })
    .await?;
    let invoices = written.count_documents(doc! {}).await?;
    check_invoices(committed, invoices, &billing.report())
}

async fn open_store() -> anyhow::Result<MongoOutboxStore> {
    let url = std::env::var("MONGODB_URL")
        .unwrap_or_else(|_| "mongodb://127.0.0.1:27017/?replicaSet=secantus".to_owned());
    let client = Client::with_uri_str(&url).await?;
    let database = client.database(DATABASE);
    database
        .drop()
        .await
        .with_context(|| format!("connecting to {url}; run bash scripts/setup-services.sh"))?;
    let store = MongoOutboxStore::new(database, MongoOutboxOptions::new())?;
    store.ensure_indexes().await?;
    Ok(store)
}

fn orders(store: &MongoOutboxStore) -> Collection<Document> {
    store.database().collection("orders")
}

fn invoices(store: &MongoOutboxStore) -> Collection<Document> {
    store.database().collection("invoices")
}

/// Places the orders, each with its event in one transaction run by the
/// store's transaction helper; one in five is abandoned, taking its order
/// and event with it. Returns how many committed.
async fn place_orders(store: &MongoOutboxStore) -> anyhow::Result<u64> {
    let mut committed = 0;
    for order_id in 1..=ORDERS_TO_PLACE {
        let orders = orders(store);
        let placed = store
            .transaction(|ctx| {
                let orders = orders.clone();
                async move {
                    let amount_cents = 1_000 + order_id;
                    orders
                        .insert_one(doc! { "_id": order_id, "amount_cents": amount_cents })
                        .session(ctx.session())
                        .await?;
                    let event = OrderPlaced {
                        order_id,
                        amount_cents,
                    };
                    ctx.outbox()
                        .stage(&ORDER_EVENTS, "order.placed", &event)?
                        .ordering_key(format!("customer-{}", order_id % 3));
                    if order_id % 5 == 0 {
                        return Err(CommitError::abandon("the customer cancelled"));
                    }
                    Ok(())
                }
                .boxed()
            })
            .await;
        match placed {
            Ok(()) => committed += 1,
            Err(CommitError::Abandoned(reason)) => {
                println!("order {order_id} rolled back: {reason}")
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(committed)
}

/// The billing handler: the invoice commits with the inbox mark. An event
/// for an order this database does not know can never succeed.
async fn bill(msg: Message<OrderPlaced>, tx: TxHandle<MongoContext>) -> Result<(), HandlerError> {
    let order = &msg.payload;
    let mut ctx = tx.lock().await;
    let store = ctx.store().clone();
    let known = orders(&store)
        .find_one(doc! { "_id": order.order_id })
        .session(ctx.session())
        .await?;
    if known.is_none() {
        return Err(HandlerError::permanent(format!(
            "unknown order {}",
            order.order_id
        )));
    }
    invoices(&store)
        .insert_one(doc! { "_id": order.order_id, "amount_cents": order.amount_cents })
        .session(ctx.session())
        .await?;
    print_invoice(&msg);
    Ok(())
}
