//! Orders, a consumer driven until a condition holds, and effect counters
//! kept in the in-memory store.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tidings_consumer::{Consumer, ConsumerOptions, ConsumerReport, TxHandle};
use tidings_core::memory::{MemoryContext, MemoryStore};
use tidings_core::{Backoff, Envelope, Message, QueueSpec};
use tidings_sqs::SqsSource;
use tokio_util::sync::CancellationToken;

pub use tidings_testing::consumer::Order;

pub const QUICK: Backoff = Backoff::new(Duration::from_millis(10), Duration::from_millis(200));

pub fn options() -> ConsumerOptions {
    ConsumerOptions::default()
        .retry_backoff(QUICK)
        .restart_backoff(QUICK)
        .shutdown_timeout(Duration::from_secs(10))
}

pub fn order(queue: &str, id: u32) -> Envelope {
    let payload = Bytes::from(serde_json::to_vec(&Order { id }).unwrap());
    Envelope::new(
        "order-events",
        queue,
        "order.placed",
        payload,
        "application/json",
    )
}

/// A queue spec for a queue named at run time.
pub fn spec(queue: &str) -> &'static QueueSpec<Order> {
    let name: &'static str = Box::leak(queue.to_owned().into_boxed_str());
    Box::leak(Box::new(QueueSpec::json(name)))
}

/// Runs `consumer` until `done` holds for its report, for at most `limit`.
pub async fn run_until<H>(
    consumer: Consumer<SqsSource, Order, tidings_core::JsonCodec, H, MemoryStore>,
    limit: Duration,
    done: impl Fn(&ConsumerReport) -> bool,
) -> ConsumerReport
where
    H: tidings_consumer::Handler<Order, MemoryContext>,
{
    let cancel = CancellationToken::new();
    let consumer = Arc::new(consumer);
    let task = tokio::spawn({
        let (consumer, cancel) = (consumer.clone(), cancel.clone());
        async move { consumer.run(cancel).await }
    });
    let deadline = tokio::time::Instant::now() + limit;
    while !done(&consumer.report()) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cancel.cancel();
    task.await.unwrap();
    consumer.report()
}

/// Adds one to the order's effect counter in the handler's transaction.
pub async fn count_effect(msg: &Message<Order>, tx: &TxHandle<MemoryContext>) {
    let mut tx = tx.lock().await;
    let key = msg.payload.id.to_string();
    let seen: u32 = tx
        .get("effects", &key)
        .map_or(0, |b| std::str::from_utf8(&b).unwrap().parse().unwrap());
    tx.insert("effects", key, (seen + 1).to_string());
}

/// The effect counters per order id.
pub fn effects(store: &MemoryStore) -> HashMap<u32, u32> {
    store
        .table("effects")
        .into_iter()
        .map(|(k, v)| {
            (
                k.parse().unwrap(),
                std::str::from_utf8(&v).unwrap().parse().unwrap(),
            )
        })
        .collect()
}
