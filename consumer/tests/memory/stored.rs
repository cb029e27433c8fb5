//! The stored inbox on the in-memory store and broker: messages are
//! stored and acked at once, handled from the store with each effect
//! once, wait there through a handler outage, and park into the store.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::time::Duration;

use support::memory::*;
use tidings_consumer::{
    Consumer, ConsumerOptions, ConsumerReport, Expired, HandlerError, Inbox, KeyOrder, StoredInbox,
    TxHandle, handler_fn,
};
use tidings_core::memory::{MemoryBroker, MemoryContext, MemoryStore};
use tidings_core::relay::RelayOptions;
use tidings_core::{Backoff, Message, OutboxStore, PublisherExt, Requeue};
use tidings_testing::eventually::eventually;
use tokio_util::sync::CancellationToken;

/// Messages of a stored consumer named `billing` wait under this route.
const ROUTE: &str = "billing";

/// A stored consumer of `orders` running on a task of its own, handling
/// with `handler`; its store keeps the inbox marks, the effects and the
/// stored messages.
struct Stored {
    cancel: CancellationToken,
    task: tokio::task::JoinHandle<ConsumerReport>,
}

impl Stored {
    fn start<H>(store: &MemoryStore, broker: &MemoryBroker, handler: H, key_order: KeyOrder) -> Self
    where
        H: tidings_consumer::Handler<Order, MemoryContext>,
    {
        Self::with(store, broker, handler, options().key_order(key_order))
    }

    fn with<H>(
        store: &MemoryStore,
        broker: &MemoryBroker,
        handler: H,
        options: ConsumerOptions,
    ) -> Self
    where
        H: tidings_consumer::Handler<Order, MemoryContext>,
    {
        let stored = StoredInbox::new(store.clone())
            .retry_backoff(Backoff::new(
                Duration::from_millis(20),
                Duration::from_millis(100),
            ))
            .relay_options(
                RelayOptions::default()
                    .batch_size(16)
                    .publish_window(4)
                    .poll_interval(Duration::from_millis(50)),
            );
        let consumer = Consumer::new(broker.clone(), &ORDERS, handler)
            .unwrap()
            .inbox(Inbox::new(store.clone(), ROUTE).unwrap())
            .options(options)
            .stored(stored)
            .unwrap();
        let cancel = CancellationToken::new();
        let task = tokio::spawn({
            let cancel = cancel.clone();
            async move {
                consumer
                    .run(cancel)
                    .await
                    .expect("the stored consumer runs");
                consumer.report()
            }
        });
        Self { cancel, task }
    }

    async fn stop(self) -> ConsumerReport {
        self.cancel.cancel();
        self.task.await.unwrap()
    }
}

fn counting() -> impl tidings_consumer::Handler<Order, MemoryContext> {
    counting_unless(|_| None)
}

/// Counts each order's effect, unless `fails` gives the error to fail the
/// order with instead.
fn counting_unless<F>(fails: F) -> impl tidings_consumer::Handler<Order, MemoryContext>
where
    F: Fn(&Message<Order>) -> Option<HandlerError> + Clone + Send + Sync + 'static,
{
    handler_fn(move |msg: Message<Order>, tx: TxHandle<MemoryContext>| {
        let fails = fails.clone();
        async move {
            if let Some(error) = fails(&msg) {
                return Err(error);
            }
            count_effect(&msg, &tx).await;
            Ok(())
        }
    })
}

async fn effects_when(store: &MemoryStore, orders: usize) -> std::collections::HashMap<u32, u32> {
    eventually(
        Duration::from_secs(10),
        || async { effects(store) },
        |e| e.len() >= orders,
    )
    .await
}

#[tokio::test]
async fn each_message_is_stored_once_acked_and_handled_once() {
    let (store, broker) = setup();
    for id in 0..50 {
        broker.publish(&order(id, None)).await.unwrap();
    }
    // The same message delivered twice is stored once.
    let twice = order(50, None);
    broker.publish(&twice).await.unwrap();
    broker.publish(&twice).await.unwrap();
    let running = Stored::start(&store, &broker, counting(), KeyOrder::Unordered);
    let effects = effects_when(&store, 51).await;
    assert_eq!(effects.len(), 51);
    assert!(effects.values().all(|&n| n == 1), "{effects:?}");
    assert_eq!(broker.depth("orders") + broker.unacked("orders"), 0);
    let stats = eventually(
        Duration::from_secs(5),
        || async { store.stats(ROUTE).await.unwrap() },
        |s| s.pending == 0 && s.in_flight == 0,
    )
    .await;
    assert_eq!((stats.pending, stats.in_flight, stats.failed), (0, 0, 0));
    let report = running.stop().await;
    assert_eq!(report.processed + report.duplicates, 51, "{report:?}");
}

#[tokio::test]
async fn messages_wait_in_the_store_through_a_handler_outage() {
    let (store, broker) = setup();
    let down = Arc::new(AtomicBool::new(true));
    let handler = counting_unless({
        let down = down.clone();
        move |_| {
            down.load(SeqCst)
                .then(|| HandlerError::transient("the ledger is down"))
        }
    });
    let running = Stored::start(&store, &broker, handler, KeyOrder::Unordered);
    for id in 0..20 {
        broker.publish(&order(id, None)).await.unwrap();
    }
    // Stored and acked while the handler fails: the broker holds nothing
    // and has nothing to redeliver.
    let stored = eventually(
        Duration::from_secs(5),
        || async { store.stats(ROUTE).await.unwrap() },
        |s| s.pending + s.in_flight == 20,
    )
    .await;
    assert_eq!(stored.pending + stored.in_flight, 20);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(broker.depth("orders") + broker.unacked("orders"), 0);
    assert_eq!(broker.depth("orders.dlq"), 0, "nothing parked");
    assert!(effects(&store).is_empty());

    down.store(false, SeqCst);
    let effects = effects_when(&store, 20).await;
    assert_eq!(effects.len(), 20);
    assert!(effects.values().all(|&n| n == 1), "{effects:?}");
    let report = running.stop().await;
    assert_eq!(report.parked, 0);
}

#[tokio::test]
async fn a_permanent_error_parks_into_the_store_and_requeues() {
    let (store, broker) = setup();
    let cured = Arc::new(AtomicBool::new(false));
    let handler = counting_unless({
        let cured = cured.clone();
        move |msg| {
            let failing = msg.payload.id == 3 && !cured.load(SeqCst);
            failing.then(|| HandlerError::permanent("order 3 names no customer"))
        }
    });
    let running = Stored::start(&store, &broker, handler, KeyOrder::Unordered);
    for id in 0..6 {
        broker.publish(&order(id, None)).await.unwrap();
    }
    let failed = eventually(
        Duration::from_secs(10),
        || async { store.stats(ROUTE).await.unwrap().failed },
        |&n| n > 0,
    )
    .await;
    assert_eq!(failed, 1, "the parked message is a failed row");
    assert_eq!(effects_when(&store, 5).await.len(), 5);
    assert_eq!(
        broker.depth("orders.dlq"),
        0,
        "parked in the store, not the broker"
    );

    cured.store(true, SeqCst);
    let requeued = store.requeue_failed(ROUTE, Requeue::All).await.unwrap();
    assert_eq!(requeued, 1);
    let effects = effects_when(&store, 6).await;
    assert!(effects.values().all(|&n| n == 1), "{effects:?}");
    let report = running.stop().await;
    assert_eq!(report.parked, 1, "{report:?}");
}

#[tokio::test]
async fn a_keys_messages_are_handled_in_order() {
    let (store, broker) = setup();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let handler = {
        let seen = seen.clone();
        handler_fn(move |msg: Message<Order>, tx: TxHandle<MemoryContext>| {
            let seen = seen.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(1)).await;
                seen.lock()
                    .unwrap()
                    .push((msg.ordering_key().map(str::to_owned), msg.payload.id));
                count_effect(&msg, &tx).await;
                Ok(())
            }
        })
    };
    for id in 0..60 {
        let key = format!("k{}", id % 3);
        broker.publish(&order(id, Some(&key))).await.unwrap();
    }
    let running = Stored::start(&store, &broker, handler, KeyOrder::Strict);
    assert_eq!(effects_when(&store, 60).await.len(), 60);
    running.stop().await;
    let seen = seen.lock().unwrap().clone();
    for key in ["k0", "k1", "k2"] {
        let ids: Vec<u32> = seen
            .iter()
            .filter(|(k, _)| k.as_deref() == Some(key))
            .map(|(_, id)| *id)
            .collect();
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        assert_eq!(ids, sorted, "key {key} in order");
    }
}

#[tokio::test]
async fn an_expired_message_is_skipped_or_parked_as_the_consumer_says() {
    for (choice, failed) in [(Expired::Skip, 0), (Expired::Park, 1)] {
        let (store, broker) = setup();
        let mut stale = order(1, None);
        stale.expires_at = Some(std::time::SystemTime::now() - Duration::from_secs(1));
        broker.publish(&stale).await.unwrap();
        broker.publish(&order(2, None)).await.unwrap();
        let running = Stored::with(&store, &broker, counting(), options().expired(choice));
        assert_eq!(
            effects_when(&store, 1).await.keys().collect::<Vec<_>>(),
            [&2]
        );
        let stats = eventually(
            Duration::from_secs(5),
            || async { store.stats(ROUTE).await.unwrap() },
            |s| s.pending + s.in_flight == 0,
        )
        .await;
        assert_eq!(stats.failed, failed, "{choice:?}: {stats:?}");
        let report = running.stop().await;
        assert_eq!(report.expired, 1, "{choice:?}: {report:?}");
    }
}
