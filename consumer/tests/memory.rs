//! The consumer runner on the in-memory store and broker.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tidings_consumer::{
    Consumer, ConsumerOptions, ConsumerReport, HandlerError, TxHandle, handler_fn,
};
use tidings_core::memory::{MemoryBroker, MemoryContext, MemoryStore};
use tidings_core::{Backoff, Envelope, Message, Publisher, QueueSpec};
use tidings_inbox::Inbox;
use tokio_util::sync::CancellationToken;

static ORDERS: QueueSpec<Order> = QueueSpec::json("orders");

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Order {
    id: u32,
}

const QUICK: Backoff = Backoff::new(Duration::from_millis(5), Duration::from_millis(20));

fn options() -> ConsumerOptions {
    ConsumerOptions::default()
        .retry_backoff(QUICK)
        .restart_backoff(QUICK)
        .shutdown_timeout(Duration::from_secs(5))
}

fn order(id: u32, key: Option<&str>) -> Envelope {
    let payload = Bytes::from(serde_json::to_vec(&Order { id }).unwrap());
    let mut env = Envelope::new(
        "order-events",
        "orders",
        "order.placed",
        payload,
        "application/json",
    );
    env.ordering_key = key.map(str::to_owned);
    env
}

fn setup() -> (MemoryStore, MemoryBroker) {
    let broker = MemoryBroker::new();
    broker.declare_queue("orders");
    (MemoryStore::new(), broker)
}

/// Adds one to the order's effect counter in the handler's transaction.
async fn count_effect(msg: &Message<Order>, tx: &TxHandle<MemoryContext>) {
    let mut tx = tx.lock().await;
    let key = msg.payload.id.to_string();
    let seen: u32 = tx
        .get("effects", &key)
        .map_or(0, |b| std::str::from_utf8(&b).unwrap().parse().unwrap());
    tx.insert("effects", key, (seen + 1).to_string());
}

fn effects(store: &MemoryStore) -> HashMap<u32, u32> {
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

/// Runs the consumer until `done` holds for its report, for at most 10 s.
async fn run_until<H>(
    consumer: Consumer<MemoryBroker, Order, tidings_core::JsonCodec, H, MemoryStore>,
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
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !done(&consumer.report()) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    cancel.cancel();
    task.await.unwrap();
    consumer.report()
}

#[tokio::test]
async fn a_message_delivered_three_times_has_its_effect_once() {
    let (store, broker) = setup();
    let sent = order(1, None);
    for _ in 0..3 {
        broker.publish(&sent).await.unwrap();
    }
    let handler = handler_fn(
        |msg: Message<Order>, tx: TxHandle<MemoryContext>| async move {
            count_effect(&msg, &tx).await;
            Ok(())
        },
    );
    let consumer = Consumer::new(broker.clone(), &ORDERS, handler)
        .unwrap()
        .inbox(Inbox::new(store.clone(), "billing").unwrap())
        .options(options());

    let report = run_until(consumer, |r| r.processed + r.duplicates == 3).await;
    assert_eq!((report.processed, report.duplicates), (1, 2));
    assert_eq!(effects(&store), HashMap::from([(1, 1)]));
    assert_eq!(broker.depth("orders") + broker.unacked("orders"), 0);
}

#[tokio::test]
async fn a_failing_handler_leaves_nothing_and_succeeds_on_redelivery() {
    let (store, broker) = setup();
    broker.publish(&order(7, None)).await.unwrap();
    let calls = Arc::new(AtomicU32::new(0));
    let handler = handler_fn({
        let calls = calls.clone();
        move |msg: Message<Order>, tx: TxHandle<MemoryContext>| {
            let calls = calls.clone();
            async move {
                count_effect(&msg, &tx).await;
                match calls.fetch_add(1, SeqCst) {
                    0 | 1 => Err(HandlerError::transient("database hiccup")),
                    _ => Ok(()),
                }
            }
        }
    });
    let inbox = Inbox::new(store.clone(), "billing").unwrap();
    let consumer = Consumer::new(broker.clone(), &ORDERS, handler)
        .unwrap()
        .inbox(inbox)
        .options(options().attempts(1));

    let report = run_until(consumer, |r| r.processed == 1).await;
    assert_eq!((report.failed, report.processed), (2, 1));
    assert_eq!(calls.load(SeqCst), 3);
    assert_eq!(
        effects(&store),
        HashMap::from([(7, 1)]),
        "failed attempts left writes behind"
    );
}

#[tokio::test]
async fn poison_is_parked_and_does_not_block_the_queue() {
    let (store, broker) = setup();
    broker.publish(&order(666, None)).await.unwrap();
    let mut garbage = order(0, None);
    garbage.payload = Bytes::from_static(b"{not json");
    broker.publish(&garbage).await.unwrap();
    for id in 1..=5 {
        broker.publish(&order(id, None)).await.unwrap();
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    let handler = handler_fn({
        let seen = seen.clone();
        move |msg: Message<Order>, tx: TxHandle<MemoryContext>| {
            let seen = seen.clone();
            async move {
                seen.lock().unwrap().push(msg.payload.id);
                if msg.payload.id == 666 {
                    return Err(HandlerError::transient("always fails"));
                }
                count_effect(&msg, &tx).await;
                Ok(())
            }
        }
    });
    let inbox = Inbox::new(store.clone(), "billing").unwrap();
    let options = options().attempts(2).max_deliveries(3).concurrency(1);
    let consumer = Consumer::new(broker.clone(), &ORDERS, handler)
        .unwrap()
        .inbox(inbox)
        .options(options);

    let report = run_until(consumer, |r| r.parked == 2 && r.processed == 5).await;
    assert_eq!((report.processed, report.parked), (5, 2));
    let seen = seen.lock().unwrap();
    assert_eq!(
        seen.iter().filter(|id| **id == 666).count(),
        6,
        "3 deliveries x 2 attempts, then parked"
    );
    assert!(
        !seen.contains(&0),
        "undecodable payload reached the handler"
    );
    assert_eq!(broker.depth("orders.dlq"), 2);
    assert_eq!(effects(&store).len(), 5);
}

#[tokio::test]
async fn per_key_messages_run_one_at_a_time_in_order() {
    let (store, broker) = setup();
    let keys = ["a", "b", "c", "d", "e"];
    for id in 0..100u32 {
        broker
            .publish(&order(id, Some(keys[id as usize % 5])))
            .await
            .unwrap();
    }
    let running: Arc<Mutex<HashSet<String>>> = Arc::default();
    let order_seen: Arc<Mutex<HashMap<String, Vec<u32>>>> = Arc::default();
    let peak = Arc::new(AtomicU32::new(0));
    let handler = handler_fn({
        let (running, order_seen, peak) = (running.clone(), order_seen.clone(), peak.clone());
        move |msg: Message<Order>, tx: TxHandle<MemoryContext>| {
            let (running, order_seen, peak) = (running.clone(), order_seen.clone(), peak.clone());
            async move {
                let key = msg.ordering_key().unwrap().to_owned();
                {
                    let mut now = running.lock().unwrap();
                    assert!(now.insert(key.clone()), "two messages of key {key} at once");
                    peak.fetch_max(now.len() as u32, SeqCst);
                }
                order_seen
                    .lock()
                    .unwrap()
                    .entry(key.clone())
                    .or_default()
                    .push(msg.payload.id);
                tokio::time::sleep(Duration::from_millis(2)).await;
                count_effect(&msg, &tx).await;
                running.lock().unwrap().remove(&key);
                Ok(())
            }
        }
    });
    let inbox = Inbox::new(store.clone(), "billing").unwrap();
    let consumer = Consumer::new(broker.clone(), &ORDERS, handler)
        .unwrap()
        .inbox(inbox)
        .options(options().concurrency(8));

    let report = run_until(consumer, |r| r.processed == 100).await;
    assert_eq!(report.processed, 100);
    assert!(peak.load(SeqCst) > 1, "keys never ran concurrently");
    let order_seen = order_seen.lock().unwrap();
    for (i, key) in keys.iter().enumerate() {
        let expected: Vec<u32> = (0..100).filter(|id| *id as usize % 5 == i).collect();
        assert_eq!(order_seen[*key], expected);
    }
}

#[tokio::test]
async fn a_handler_timeout_is_a_transient_failure() {
    let (store, broker) = setup();
    broker.publish(&order(1, None)).await.unwrap();
    let calls = Arc::new(AtomicU32::new(0));
    let handler = handler_fn({
        let calls = calls.clone();
        move |msg: Message<Order>, tx: TxHandle<MemoryContext>| {
            let calls = calls.clone();
            async move {
                count_effect(&msg, &tx).await;
                if calls.fetch_add(1, SeqCst) == 0 {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                }
                Ok(())
            }
        }
    });
    let inbox = Inbox::new(store.clone(), "billing").unwrap();
    let options = options().handler_timeout(Duration::from_millis(100));
    let consumer = Consumer::new(broker.clone(), &ORDERS, handler)
        .unwrap()
        .inbox(inbox)
        .options(options);

    let report = run_until(consumer, |r| r.processed == 1).await;
    assert_eq!(
        (report.processed, report.failed),
        (1, 0),
        "retried in process after the timeout"
    );
    assert_eq!(calls.load(SeqCst), 2);
    assert_eq!(effects(&store), HashMap::from([(1, 1)]));
}

#[tokio::test]
async fn shutdown_under_load_then_restart_applies_every_message_once() {
    let (store, broker) = setup();
    for id in 0..200 {
        broker.publish(&order(id, None)).await.unwrap();
    }
    let slow = handler_fn(
        |msg: Message<Order>, tx: TxHandle<MemoryContext>| async move {
            tokio::time::sleep(Duration::from_millis(3)).await;
            count_effect(&msg, &tx).await;
            Ok(())
        },
    );
    let inbox = Inbox::new(store.clone(), "billing").unwrap();
    let first = Consumer::new(broker.clone(), &ORDERS, slow)
        .unwrap()
        .inbox(inbox.clone())
        .options(options());
    let cancel = CancellationToken::new();
    let stopper = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(60)).await;
            cancel.cancel();
        })
    };
    first.run(cancel).await;
    stopper.await.unwrap();
    let partial = first.report().processed;
    assert!(
        partial > 0 && partial < 200,
        "shutdown should land mid-load, processed {partial}"
    );
    assert_eq!(
        broker.unacked("orders"),
        0,
        "deliveries left unacked after shutdown"
    );
    assert_eq!(
        effects(&store).len() as u64,
        partial,
        "an effect committed without its ack, or the reverse"
    );

    let second = Consumer::new(broker.clone(), &ORDERS, slow)
        .unwrap()
        .inbox(inbox)
        .options(options());
    let report = run_until(second, |r| r.processed + r.duplicates + partial >= 200).await;
    assert_eq!(report.processed + partial, 200);
    let effects = effects(&store);
    assert_eq!(effects.len(), 200);
    assert!(
        effects.values().all(|n| *n == 1),
        "an order had its effect twice"
    );
}

/// A source whose streams fail after a few deliveries, as a dropped broker
/// connection would; unsettled deliveries go back to the queue.
#[derive(Clone)]
struct Flaky {
    broker: MemoryBroker,
    cut_after: usize,
    subscriptions: Arc<AtomicU32>,
}

impl tidings_core::Source for Flaky {
    type Acker = tidings_core::memory::MemoryAcker;
    type Stream = futures::stream::BoxStream<
        'static,
        Result<
            tidings_core::Delivery<tidings_core::memory::MemoryAcker>,
            tidings_core::SourceError,
        >,
    >;

    async fn subscribe(&self, queue: &str) -> Result<Self::Stream, tidings_core::SourceError> {
        use futures::StreamExt;
        self.subscriptions.fetch_add(1, SeqCst);
        let lost = futures::stream::once(async {
            Err(tidings_core::SourceError::Unavailable(
                "connection reset by peer".into(),
            ))
        });
        Ok(self
            .broker
            .subscribe(queue)
            .await?
            .take(self.cut_after)
            .chain(lost)
            .boxed())
    }
}

#[tokio::test]
async fn a_lost_source_is_resubscribed_and_nothing_is_lost_or_doubled() {
    let (store, broker) = setup();
    for id in 0..50 {
        broker.publish(&order(id, None)).await.unwrap();
    }
    let flaky = Flaky {
        broker: broker.clone(),
        cut_after: 7,
        subscriptions: Arc::default(),
    };
    let handler = handler_fn(
        |msg: Message<Order>, tx: TxHandle<MemoryContext>| async move {
            count_effect(&msg, &tx).await;
            Ok(())
        },
    );
    let inbox = Inbox::new(store.clone(), "billing").unwrap();
    let consumer = Consumer::new(flaky.clone(), &ORDERS, handler)
        .unwrap()
        .inbox(inbox)
        .options(options());
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let cancel = cancel.clone();
        async move {
            consumer.run(cancel).await;
            consumer.report()
        }
    });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while effects(&store).len() < 50 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    cancel.cancel();
    let report = task.await.unwrap();
    assert!(
        flaky.subscriptions.load(SeqCst) >= 7,
        "the consumer did not resubscribe"
    );
    assert_eq!(report.processed, 50);
    let effects = effects(&store);
    assert_eq!(effects.len(), 50);
    assert!(effects.values().all(|n| *n == 1));
}

#[tokio::test]
async fn reactions_sort_after_their_cause_with_a_shared_hybrid_clock() {
    static REACTIONS: tidings_core::OutboxSpec<u32> = tidings_core::OutboxSpec::json("reactions")
        .to_queue("invoices")
        .hlc_ordering();
    let (store, broker) = setup();
    let mut cause = order(1, None);
    let ahead = store.hlc().now().physical_ms() + 20_000;
    cause.hlc = Some(tidings_core::Hlc::from_u64(ahead << 16));
    broker.publish(&cause).await.unwrap();
    let handler = handler_fn(
        |msg: Message<Order>, tx: TxHandle<MemoryContext>| async move {
            tx.lock()
                .await
                .outbox()
                .stage(&REACTIONS, "invoice.created", &msg.payload.id)?;
            Ok(())
        },
    );
    let inbox = Inbox::new(store.clone(), "billing").unwrap();
    let consumer = Consumer::new(broker.clone(), &ORDERS, handler)
        .unwrap()
        .inbox(inbox)
        .hybrid_clock(store.hlc().clone())
        .options(options());
    run_until(consumer, |r| r.processed == 1).await;

    let request = tidings_core::ClaimRequest {
        route: REACTIONS.route(),
        limit: 1,
        lease: Duration::from_secs(60),
    };
    let batch = tidings_core::OutboxStore::claim(&store, request)
        .await
        .unwrap();
    let reaction = tidings_core::ClaimedBatch::records(&batch)[0]
        .envelope
        .hlc
        .unwrap();
    assert!(
        reaction > cause.hlc.unwrap(),
        "the reaction {reaction} does not sort after its cause"
    );
}
