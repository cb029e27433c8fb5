//! The whole path on PostgreSQL: orders stage events in their transaction,
//! the relay publishes them to a broker that duplicates some, and a
//! consumer whose inbox lives in the same database writes one invoice per
//! order, skipping the duplicates.

use crate::support;

use sqlx::AssertSqlSafe;
use support::billing::{ORDERS, invoice_all, rows};
use support::{drop_schema, run_sql, store};
use tidings_core::OutboxSpec;
use tidings_core::memory::{MemoryBroker, MemoryBrokerOptions};
use tidings_core::relay::Relay;
use tidings_postgres::Retention;

static ORDER_EVENTS: OutboxSpec<i64> = OutboxSpec::json("order-events")
    .destination("orders")
    .per_key();

const ORDER_COUNT: i64 = 40;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_committed_order_is_invoiced_exactly_once() {
    let store = store(Retention::Keep).await;
    let schema = store.options().get_schema().to_owned();
    let orders = format!("\"{schema}\".orders");
    let invoices = format!("\"{schema}\".invoices");
    run_sql(
        store.pool(),
        format!("create table {orders} (id bigint primary key)"),
    )
    .await;
    run_sql(
        store.pool(),
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

    let report = invoice_all(&store, store.pool(), &broker, &invoices, committed).await;

    assert_eq!(rows(store.pool(), &invoices).await, committed);
    assert_eq!(report.processed, committed as u64);
    assert!(report.duplicates > 0, "{report:?}");
    assert_eq!(
        rows(store.pool(), &format!("\"{schema}\".tidings_inbox")).await,
        committed
    );
    drop_schema(&store).await;
}
