//! Batches (`ConsumerOptions::max_batch`) on the in-memory store and
//! broker: shared transactions, rollback to one at a time, key order.

use crate::support;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use support::memory::*;
use tidings_consumer::{Consumer, HandlerError, TxHandle, handler_fn};
use tidings_core::memory::MemoryContext;
use tidings_core::{Message, PublisherExt};
use tidings_inbox::Inbox;

#[tokio::test]
async fn waiting_deliveries_share_a_transaction_and_each_has_its_effect_once() {
    let (store, broker) = setup();
    let sent: Vec<_> = (0..60).map(|id| order(id, None)).collect();
    for envelope in &sent {
        broker.publish(envelope).await.unwrap();
    }
    // Redeliveries of three events, some landing in the same batch.
    for envelope in &sent[..3] {
        broker.publish(envelope).await.unwrap();
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
        .options(options().concurrency(2).max_batch(8));

    let report = run_until(consumer, |r| r.processed + r.duplicates == 63).await;
    assert_eq!((report.processed, report.duplicates), (60, 3));
    assert!(
        report.batched > 0,
        "no delivery shared a transaction: {report:?}"
    );
    let expected: HashMap<u32, u32> = (0..60).map(|id| (id, 1)).collect();
    assert_eq!(effects(&store), expected);
    assert_eq!(broker.depth("orders") + broker.unacked("orders"), 0);
}

#[tokio::test]
async fn a_failure_rolls_the_batch_back_and_each_delivery_runs_on_its_own() {
    let (store, broker) = setup();
    for id in 0..20 {
        broker.publish(&order(id, None)).await.unwrap();
    }
    let mut garbage = order(100, None);
    garbage.payload = Bytes::from_static(b"{not json");
    broker.publish(&garbage).await.unwrap();
    let calls = Arc::new(AtomicU32::new(0));
    let runs: Arc<Mutex<HashMap<u32, u32>>> = Arc::default();
    let handler = handler_fn({
        let (calls, runs) = (calls.clone(), runs.clone());
        move |msg: Message<Order>, tx: TxHandle<MemoryContext>| {
            let (calls, runs) = (calls.clone(), runs.clone());
            async move {
                *runs.lock().unwrap().entry(msg.payload.id).or_default() += 1;
                // The write lands before the failure, so a rollback that
                // missed it would show as a second effect.
                count_effect(&msg, &tx).await;
                match msg.payload.id {
                    13 => Err(HandlerError::permanent("order 13 is refused")),
                    7 if calls.fetch_add(1, SeqCst) == 0 => {
                        Err(HandlerError::transient("a lock timed out"))
                    }
                    _ => Ok(()),
                }
            }
        }
    });
    let consumer = Consumer::new(broker.clone(), &ORDERS, handler)
        .unwrap()
        .inbox(Inbox::new(store.clone(), "billing").unwrap())
        .options(options().concurrency(1).max_batch(10));

    let report = run_until(consumer, |r| r.processed == 19 && r.parked == 2).await;
    assert_eq!((report.processed, report.parked, report.failed), (19, 2, 0));
    let expected: HashMap<u32, u32> = (0..20).filter(|id| *id != 13).map(|id| (id, 1)).collect();
    assert_eq!(
        effects(&store),
        expected,
        "a rolled-back batch left writes behind"
    );
    let runs = runs.lock().unwrap();
    assert!(
        runs.iter().any(|(id, n)| ![7, 13].contains(id) && *n > 1),
        "no batch was rolled back and run again: {runs:?}"
    );
    assert_eq!(broker.depth("orders.dlq"), 2, "order 13 and the garbage");
    assert_eq!(broker.depth("orders") + broker.unacked("orders"), 0);
}

#[tokio::test]
async fn batches_keep_each_key_in_order_and_one_at_a_time() {
    let (store, broker) = setup();
    let keys = ["a", "b", "c"];
    for id in 0..90u32 {
        let key = keys[id as usize % keys.len()];
        broker.publish(&order(id, Some(key))).await.unwrap();
    }
    let running: Arc<Mutex<HashSet<String>>> = Arc::default();
    let seen: Arc<Mutex<HashMap<String, Vec<u32>>>> = Arc::default();
    let handler = handler_fn({
        let (running, seen) = (running.clone(), seen.clone());
        move |msg: Message<Order>, tx: TxHandle<MemoryContext>| {
            let (running, seen) = (running.clone(), seen.clone());
            async move {
                let key = msg.ordering_key().unwrap().to_owned();
                assert!(
                    running.lock().unwrap().insert(key.clone()),
                    "two messages of key {key} at once"
                );
                seen.lock()
                    .unwrap()
                    .entry(key.clone())
                    .or_default()
                    .push(msg.payload.id);
                tokio::time::sleep(Duration::from_millis(1)).await;
                count_effect(&msg, &tx).await;
                running.lock().unwrap().remove(&key);
                Ok(())
            }
        }
    });
    let consumer = Consumer::new(broker.clone(), &ORDERS, handler)
        .unwrap()
        .inbox(Inbox::new(store.clone(), "billing").unwrap())
        .options(options().concurrency(4).max_batch(4));

    let report = run_until(consumer, |r| r.processed == 90).await;
    assert_eq!(report.processed, 90);
    assert!(report.batched > 0, "no batch formed: {report:?}");
    let seen = seen.lock().unwrap();
    for (i, key) in keys.iter().enumerate() {
        let expected: Vec<u32> = (0..90).filter(|id| *id as usize % 3 == i).collect();
        assert_eq!(seen[*key], expected, "key {key} out of order");
    }
    assert_eq!(effects(&store).len(), 90);
}
