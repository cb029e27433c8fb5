//! What `KeyOrder::Strict` does on the in-memory store and broker at its
//! edges: a delivery failing past its strict attempts, and shutdown while
//! a key is held. Order under failures at scale is in the consumer suite
//! (`suite.rs`).

use crate::support;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use support::memory::*;
use tidings_consumer::{Consumer, HandlerError, KeyOrder, TxHandle, handler_fn};
use tidings_core::memory::MemoryContext;
use tidings_core::{Backoff, Message, PublisherExt};
use tidings_inbox::Inbox;

#[tokio::test]
async fn a_delivery_failing_past_its_strict_attempts_is_parked_and_frees_its_key() {
    let (store, broker) = setup();
    broker.publish(&order(1, Some("a"))).await.unwrap();
    broker.publish(&order(2, Some("a"))).await.unwrap();
    broker.publish(&order(3, None)).await.unwrap();
    let calls: Arc<Mutex<Vec<u32>>> = Arc::default();
    let handler = handler_fn({
        let calls = calls.clone();
        move |msg: Message<Order>, tx: TxHandle<MemoryContext>| {
            calls.lock().unwrap().push(msg.payload.id);
            async move {
                if msg.payload.id != 2 {
                    return Err(HandlerError::transient("always fails"));
                }
                count_effect(&msg, &tx).await;
                Ok(())
            }
        }
    });
    let options = options()
        .key_order(KeyOrder::Strict)
        .strict_attempts(4)
        .attempts(2)
        .concurrency(1);
    let consumer = Consumer::new(broker.clone(), &ORDERS, handler)
        .unwrap()
        .inbox(Inbox::new(store.clone(), "billing").unwrap())
        .options(options);

    let report = run_until(consumer, |r| {
        r.parked == 1 && r.processed == 1 && r.failed >= 1
    })
    .await;
    assert_eq!((report.parked, report.processed), (1, 1), "{report:?}");
    let calls = calls.lock().unwrap();
    let first_two: Vec<u32> = calls.iter().copied().filter(|id| *id != 3).collect();
    assert_eq!(
        first_two,
        [1, 1, 1, 1, 2],
        "order 1 held its key for its 4 strict attempts, then order 2 ran"
    );
    assert!(
        calls.iter().filter(|id| **id == 3).count() >= 2,
        "the keyless order is nacked after its 2 attempts, not held: {calls:?}"
    );
    assert_eq!(broker.depth("orders.dlq"), 1);
    assert_eq!(effects(&store), HashMap::from([(2, 1)]));
}

#[tokio::test]
async fn shutdown_leaves_a_held_key_unsettled_for_redelivery() {
    let (store, broker) = setup();
    for id in 1..=3 {
        broker.publish(&order(id, Some("a"))).await.unwrap();
    }
    let calls = Arc::new(AtomicU32::new(0));
    let handler = handler_fn({
        let calls = calls.clone();
        move |_: Message<Order>, _: TxHandle<MemoryContext>| {
            calls.fetch_add(1, SeqCst);
            async { Err(HandlerError::transient("down for a while")) }
        }
    });
    let slow = Backoff::new(Duration::from_secs(30), Duration::from_secs(30));
    let options = options()
        .key_order(KeyOrder::Strict)
        .retry_backoff(slow)
        .shutdown_timeout(Duration::from_secs(20));
    let consumer = Consumer::new(broker.clone(), &ORDERS, handler)
        .unwrap()
        .inbox(Inbox::new(store.clone(), "billing").unwrap())
        .options(options);
    let running = RunningConsumer::start(consumer);
    while calls.load(SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    let stopping = Instant::now();
    let report = running.stop().await;
    assert!(
        stopping.elapsed() < Duration::from_secs(2),
        "shutdown waited out the backoff: {:?}",
        stopping.elapsed()
    );
    assert_eq!(
        calls.load(SeqCst),
        1,
        "orders 2 and 3 waited behind order 1"
    );
    assert_eq!((report.parked, report.failed, report.processed), (0, 0, 0));
    assert_eq!(broker.depth("orders"), 3, "all three are back in the queue");
    assert_eq!(broker.unacked("orders") + broker.depth("orders.dlq"), 0);
    assert!(effects(&store).is_empty());
}
