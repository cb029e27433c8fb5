//! The consumer of the end-to-end tests: one invoice per order, written in
//! the inbox's transaction, so a duplicate delivery invoices nothing.

use std::time::{Duration, Instant};

use sqlx::{AssertSqlSafe, PgPool};
use tidings_consumer::{
    ConsumerOptions, ConsumerReport, HandlerError, TxHandle, handler_fn, run_consumer,
};
use tidings_core::memory::MemoryBroker;
use tidings_core::{InboxMark, InboxStore, Message, QueueSpec};
use tidings_inbox::Inbox;
use tidings_postgres::{PgContext, PgOutboxStore};
use tidings_testing::names::consumer_name;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// The queue the orders' events reach.
pub(crate) static ORDERS: QueueSpec<i64> = QueueSpec::json("orders");

/// Marks `event` handled by the `billing` consumer in `tx`, a transaction
/// of `store`'s inbox.
pub(crate) async fn mark_billing(
    store: &PgOutboxStore,
    tx: &mut PgContext<'static>,
    event: Uuid,
) -> InboxMark {
    let consumer = consumer_name("billing");
    store
        .inbox()
        .mark(tx, consumer.key(event))
        .await
        .expect("mark")
}

/// Rows in `table`, a qualified name, read through `reads`.
pub(crate) async fn rows(reads: &PgPool, table: &str) -> i64 {
    let sql = format!("select count(*) from {table}");
    sqlx::query_scalar(AssertSqlSafe(sql))
        .fetch_one(reads)
        .await
        .unwrap()
}

/// Runs the `billing` consumer on `broker`'s `orders` until `invoices`
/// holds `expected` rows, then a moment longer for the duplicates behind
/// the last original to arrive; returns its report. Each check reads
/// through `reads`.
pub(crate) async fn invoice_all(
    store: &PgOutboxStore,
    reads: &PgPool,
    broker: &MemoryBroker,
    invoices: &str,
    expected: i64,
) -> ConsumerReport {
    let cancel = CancellationToken::new();
    let handler = handler_fn({
        let invoices = invoices.to_owned();
        move |msg, tx| invoice(invoices.clone(), msg, tx)
    });
    let inbox = Inbox::new(store.inbox(), "billing").unwrap();
    let options = ConsumerOptions::default();
    let consumer = run_consumer(
        broker.clone(),
        &ORDERS,
        handler,
        inbox,
        options,
        cancel.clone(),
    );
    let consumer = tokio::spawn(consumer);
    let started = Instant::now();
    while rows(reads, invoices).await < expected {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "invoices missing"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    cancel.cancel();
    consumer.await.unwrap().unwrap()
}

/// The handler, with its statement unnamed so it also runs behind a
/// transaction pooler.
async fn invoice(
    invoices: String,
    msg: Message<i64>,
    tx: TxHandle<PgContext<'static>>,
) -> Result<(), HandlerError> {
    let mut ctx = tx.lock().await;
    let sql = format!("insert into {invoices} (order_id) values ($1)");
    sqlx::query(AssertSqlSafe(sql))
        .persistent(false)
        .bind(msg.payload)
        .execute(ctx.tx())
        .await
        .map_err(HandlerError::transient)?;
    Ok(())
}
