//! The consumer runner on the in-memory store and broker: dedupe,
//! failures, poison, ordering, timeouts.

mod memory_support;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use memory_support::*;
use tidings_consumer::{Consumer, HandlerError, TxHandle, handler_fn};
use tidings_core::memory::MemoryContext;
use tidings_core::{Message, Publisher};
use tidings_inbox::Inbox;

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
