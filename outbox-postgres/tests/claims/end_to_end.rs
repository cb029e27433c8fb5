//! The whole path on PostgreSQL: orders stage events in their transaction,
//! the relay publishes them to a broker that duplicates some, and a
//! consumer whose inbox lives in the same database writes one invoice per
//! order, skipping the duplicates.

use crate::support;

use std::time::{Duration, Instant};

use sqlx::AssertSqlSafe;
use support::{drop_schema, store};
use tidings_consumer::{ConsumerOptions, HandlerError, TxHandle, handler_fn, run_consumer};
use tidings_core::memory::{MemoryBroker, MemoryBrokerOptions};
use tidings_core::relay::Relay;
use tidings_core::{Message, OutboxSpec, QueueSpec};
use tidings_inbox::Inbox;
use tidings_postgres::{PgContext, PgOutboxStore, Retention};
use tokio_util::sync::CancellationToken;

static ORDER_EVENTS: OutboxSpec<i64> = OutboxSpec::json("order-events")
    .destination("orders")
    .per_key();
static ORDERS: QueueSpec<i64> = QueueSpec::json("orders");

const ORDER_COUNT: i64 = 40;

async fn execute(store: &PgOutboxStore, sql: String) {
    sqlx::raw_sql(AssertSqlSafe(sql))
        .execute(store.pool())
        .await
        .unwrap();
}

async fn count(store: &PgOutboxStore, table: &str) -> i64 {
    let sql = format!("select count(*) from {table}");
    sqlx::query_scalar(AssertSqlSafe(sql))
        .fetch_one(store.pool())
        .await
        .unwrap()
}

/// The handler: one invoice per order, written into `invoices` in the
/// inbox's transaction.
async fn invoice(
    invoices: String,
    msg: Message<i64>,
    tx: TxHandle<PgContext<'static>>,
) -> Result<(), HandlerError> {
    let mut ctx = tx.lock().await;
    let sql = format!("insert into {invoices} (order_id) values ($1)");
    sqlx::query(AssertSqlSafe(sql))
        .bind(msg.payload)
        .execute(ctx.tx())
        .await
        .map_err(HandlerError::transient)?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_committed_order_is_invoiced_exactly_once() {
    let store = store(Retention::Keep).await;
    let schema = store.options().get_schema().to_owned();
    let orders = format!("\"{schema}\".orders");
    let invoices = format!("\"{schema}\".invoices");
    execute(
        &store,
        format!("create table {orders} (id bigint primary key)"),
    )
    .await;
    execute(
        &store,
        format!("create table {invoices} (order_id bigint primary key)"),
    )
    .await;

    for id in 1..=ORDER_COUNT {
        let mut ctx = store.begin().await.unwrap();
        sqlx::query(AssertSqlSafe(format!(
            "insert into {orders} (id) values ($1)"
        )))
        .bind(id)
        .execute(ctx.tx())
        .await
        .unwrap();
        ctx.outbox()
            .stage(&ORDER_EVENTS, "order.placed", &id)
            .unwrap()
            .ordering_key(format!("customer-{}", id % 7));
        if id % 10 == 0 {
            ctx.rollback().await.unwrap();
        } else {
            ctx.commit().await.unwrap();
        }
    }
    let committed = ORDER_COUNT - ORDER_COUNT / 10;

    let broker = MemoryBroker::with_options(MemoryBrokerOptions::default().duplicate_every(4));
    broker.declare_queue(ORDERS.name());
    let relay = Relay::new(store.clone(), broker.clone(), &ORDER_EVENTS).unwrap();
    let mut published = 0;
    while published < committed as usize {
        published += relay.drain().await.unwrap().published;
    }

    let cancel = CancellationToken::new();
    let consumer = tokio::spawn(run_consumer(
        broker.clone(),
        &ORDERS,
        handler_fn({
            let invoices = invoices.clone();
            move |msg, tx| invoice(invoices.clone(), msg, tx)
        }),
        Inbox::new(store.inbox(), "billing").unwrap(),
        ConsumerOptions::default(),
        cancel.clone(),
    ));
    let started = Instant::now();
    while count(&store, &invoices).await < committed {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "invoices missing"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Give the duplicates behind the last original a moment to arrive.
    tokio::time::sleep(Duration::from_millis(300)).await;
    cancel.cancel();
    let report = consumer.await.unwrap().unwrap();

    assert_eq!(count(&store, &invoices).await, committed);
    assert_eq!(report.processed, committed as u64);
    assert!(report.duplicates > 0, "{report:?}");
    assert_eq!(
        count(&store, &format!("\"{schema}\".tidings_inbox")).await,
        committed
    );
    drop_schema(&store).await;
}
