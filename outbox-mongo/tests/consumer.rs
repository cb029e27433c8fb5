//! The consumer runner with the Mongo inbox: each message has its effect
//! once, and a failing handler leaves neither its writes nor the mark.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::time::Duration;

use bytes::Bytes;
use mongodb::Collection;
use mongodb::bson::{Document, doc};
use support::{drop_collections, inbox_count, store};
use tidings_consumer::{
    Consumer, ConsumerOptions, ConsumerReport, Handler, HandlerError, TxHandle, handler_fn,
};
use tidings_core::memory::MemoryBroker;
use tidings_core::{Backoff, Envelope, JsonCodec, Message, Publisher, QueueSpec};
use tidings_inbox::Inbox;
use tidings_mongo::{MongoContext, MongoInboxStore, MongoOutboxStore, Retention};
use tokio_util::sync::CancellationToken;

static ORDERS: QueueSpec<Order> = QueueSpec::json("orders");

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Order {
    id: u32,
}

const QUICK: Backoff = Backoff::new(Duration::from_millis(5), Duration::from_millis(50));

fn options() -> ConsumerOptions {
    ConsumerOptions::default()
        .retry_backoff(QUICK)
        .restart_backoff(QUICK)
        .shutdown_timeout(Duration::from_secs(10))
}

fn order(id: u32) -> Envelope {
    let payload = Bytes::from(format!("{{\"id\":{id}}}"));
    Envelope::new(
        "order-events",
        "orders",
        "order.placed",
        payload,
        "application/json",
    )
}

fn broker() -> MemoryBroker {
    let broker = MemoryBroker::new();
    broker.declare_queue("orders");
    broker
}

fn effects(store: &MongoOutboxStore) -> Collection<Document> {
    store
        .database()
        .collection(&format!("{}_effects", store.outbox().name()))
}

/// Adds one to the order's effect counter in the handler's transaction.
async fn count_effect(
    effects: &Collection<Document>,
    msg: &Message<Order>,
    tx: &TxHandle<MongoContext>,
) -> Result<(), HandlerError> {
    let mut tx = tx.lock().await;
    effects
        .update_one(
            doc! { "_id": msg.payload.id },
            doc! { "$inc": { "count": 1 } },
        )
        .upsert(true)
        .session(tx.session())
        .await?;
    Ok(())
}

async fn effect_count(effects: &Collection<Document>, id: u32) -> i32 {
    effects
        .find_one(doc! { "_id": id })
        .await
        .unwrap()
        .map_or(0, |d| d.get_i32("count").unwrap())
}

/// Runs the consumer until `done` holds for its report, for at most 30 s.
async fn run_until<H>(
    consumer: Consumer<MemoryBroker, Order, JsonCodec, H, MongoInboxStore>,
    done: impl Fn(&ConsumerReport) -> bool,
) -> ConsumerReport
where
    H: Handler<Order, MongoContext>,
{
    let cancel = CancellationToken::new();
    let consumer = Arc::new(consumer);
    let task = tokio::spawn({
        let (consumer, cancel) = (consumer.clone(), cancel.clone());
        async move { consumer.run(cancel).await }
    });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !done(&consumer.report()) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    cancel.cancel();
    task.await.unwrap();
    consumer.report()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_delivered_three_times_has_its_effect_once() {
    let store = store(Retention::Delete).await;
    let broker = broker();
    let sent = order(1);
    for _ in 0..3 {
        broker.publish(&sent).await.unwrap();
    }
    let effects = effects(&store);
    let handler = handler_fn({
        let effects = effects.clone();
        move |msg: Message<Order>, tx: TxHandle<MongoContext>| {
            let effects = effects.clone();
            async move { count_effect(&effects, &msg, &tx).await }
        }
    });
    let consumer = Consumer::new(broker.clone(), &ORDERS, handler)
        .unwrap()
        .inbox(Inbox::new(store.inbox(), "billing").unwrap())
        .options(options());

    let report = run_until(consumer, |r| r.processed + r.duplicates == 3).await;
    assert_eq!((report.processed, report.duplicates), (1, 2));
    assert_eq!(effect_count(&effects, 1).await, 1);
    assert_eq!(inbox_count(&store).await, 1);
    assert_eq!(broker.depth("orders") + broker.unacked("orders"), 0);
    effects.drop().await.unwrap();
    drop_collections(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_handler_leaves_neither_writes_nor_mark() {
    let store = store(Retention::Delete).await;
    let broker = broker();
    broker.publish(&order(7)).await.unwrap();
    let effects = effects(&store);
    let calls = Arc::new(AtomicU32::new(0));
    let handler = handler_fn({
        let (effects, calls) = (effects.clone(), calls.clone());
        move |msg: Message<Order>, tx: TxHandle<MongoContext>| {
            let (effects, calls) = (effects.clone(), calls.clone());
            async move {
                count_effect(&effects, &msg, &tx).await?;
                calls.fetch_add(1, SeqCst);
                Err(HandlerError::permanent("card declined"))
            }
        }
    });
    let consumer = Consumer::new(broker.clone(), &ORDERS, handler)
        .unwrap()
        .inbox(Inbox::new(store.inbox(), "billing").unwrap())
        .options(options());

    let report = run_until(consumer, |r| r.parked == 1).await;
    assert_eq!((report.parked, report.processed), (1, 0));
    assert_eq!(calls.load(SeqCst), 1);
    assert_eq!(
        effect_count(&effects, 7).await,
        0,
        "the handler's write was rolled back"
    );
    assert_eq!(
        inbox_count(&store).await,
        0,
        "no mark without the handler's success"
    );
    assert_eq!(broker.depth("orders.dlq"), 1);
    effects.drop().await.unwrap();
    drop_collections(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transient_failures_leave_nothing_until_an_attempt_succeeds() {
    let store = store(Retention::Delete).await;
    let broker = broker();
    broker.publish(&order(9)).await.unwrap();
    let effects = effects(&store);
    let calls = Arc::new(AtomicU32::new(0));
    let handler = handler_fn({
        let (effects, calls) = (effects.clone(), calls.clone());
        move |msg: Message<Order>, tx: TxHandle<MongoContext>| {
            let (effects, calls) = (effects.clone(), calls.clone());
            async move {
                count_effect(&effects, &msg, &tx).await?;
                match calls.fetch_add(1, SeqCst) {
                    0 | 1 => Err(HandlerError::transient("database hiccup")),
                    _ => Ok(()),
                }
            }
        }
    });
    let consumer = Consumer::new(broker.clone(), &ORDERS, handler)
        .unwrap()
        .inbox(Inbox::new(store.inbox(), "billing").unwrap())
        .options(options().attempts(1));

    let report = run_until(consumer, |r| r.processed == 1).await;
    assert_eq!((report.failed, report.processed), (2, 1));
    assert_eq!(
        effect_count(&effects, 9).await,
        1,
        "failed attempts left writes behind"
    );
    assert_eq!(inbox_count(&store).await, 1);
    effects.drop().await.unwrap();
    drop_collections(&store).await;
}
