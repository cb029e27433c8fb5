//! What each `KeyOrder` promises on the in-memory store and broker, with
//! about 1% of events failing transiently more often than `attempts`.

mod support;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use support::memory::*;
use tidings_consumer::{
    Consumer, ConsumerOptions, ConsumerReport, HandlerError, KeyOrder, TxHandle, handler_fn,
};
use tidings_core::memory::{MemoryContext, MemoryStore};
use tidings_core::{Backoff, Message, Publisher};
use tidings_inbox::Inbox;
use tokio_util::sync::CancellationToken;

const EVENTS: u32 = 2_000;
const KEYS: u32 = 40;
/// Times each failing event fails before it succeeds: more than
/// `ATTEMPTS`, so without a strict order it is nacked.
const FAILS: u32 = 3;
const ATTEMPTS: u32 = 2;

fn key_of(id: u32) -> String {
    format!("k{}", id % KEYS)
}

/// About 1% of the events, spread over the keys.
fn failing(id: u32) -> bool {
    (u64::from(id).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) % 100 == 0
}

/// The ids of each key in the order their effects committed.
fn commit_order(store: &MemoryStore) -> HashMap<String, Vec<u32>> {
    store
        .table("log")
        .into_iter()
        .map(|(key, log)| {
            let ids = std::str::from_utf8(&log)
                .unwrap()
                .split(',')
                .map(|id| id.parse().unwrap())
                .collect();
            (key, ids)
        })
        .collect()
}

/// Ids whose effect committed after that of a later event of their key.
fn out_of_order(logs: &HashMap<String, Vec<u32>>) -> Vec<u32> {
    let mut late = Vec::new();
    for ids in logs.values() {
        let mut newest = None;
        for &id in ids {
            match newest {
                Some(n) if id < n => late.push(id),
                _ => newest = Some(id),
            }
        }
    }
    late.sort_unstable();
    late
}

struct Outcome {
    report: ConsumerReport,
    logs: HashMap<String, Vec<u32>>,
    failing: HashSet<u32>,
    failures: u32,
}

impl Outcome {
    /// Every event's effect committed exactly once.
    fn assert_every_event_once(&self) {
        let mut seen: Vec<u32> = self.logs.values().flatten().copied().collect();
        seen.sort_unstable();
        let all: Vec<u32> = (0..EVENTS).collect();
        assert!(seen == all, "an event lost or doubled: {:?}", self.report);
        assert_eq!(self.report.processed, u64::from(EVENTS));
        assert_eq!(self.report.parked, 0);
        assert_eq!(
            self.failures,
            FAILS * self.failing.len() as u32,
            "every failing event failed {FAILS} times"
        );
    }
}

/// Publishes the events in id order, each under its key, and runs a
/// consumer until every one was handled. Each failing event appends to its
/// key's commit log only on its last try.
async fn run(options: ConsumerOptions) -> Outcome {
    let (store, broker) = setup();
    for id in 0..EVENTS {
        let key = key_of(id);
        broker.publish(&order(id, Some(&key))).await.unwrap();
    }
    let failing: HashSet<u32> = (0..EVENTS).filter(|id| failing(*id)).collect();
    assert!((10..=40).contains(&failing.len()), "{}", failing.len());
    let tries: Arc<Mutex<HashMap<u32, u32>>> = Arc::default();
    let failures = Arc::new(AtomicU32::new(0));
    let handler = handler_fn({
        let (failing, tries, failures) = (failing.clone(), tries.clone(), failures.clone());
        move |msg: Message<Order>, tx: TxHandle<MemoryContext>| {
            let id = msg.payload.id;
            let tried = {
                let mut tries = tries.lock().unwrap();
                let n = tries.entry(id).or_default();
                *n += 1;
                *n
            };
            let fail = failing.contains(&id) && tried <= FAILS;
            let failures = failures.clone();
            async move {
                if fail {
                    failures.fetch_add(1, SeqCst);
                    return Err(HandlerError::transient("a downstream hiccup"));
                }
                let key = msg.ordering_key().unwrap().to_owned();
                let mut tx = tx.lock().await;
                let log = match tx.get("log", &key) {
                    Some(log) => format!("{},{id}", std::str::from_utf8(&log).unwrap()),
                    None => id.to_string(),
                };
                tx.insert("log", key, log);
                Ok(())
            }
        }
    });
    let consumer = Consumer::new(broker.clone(), &ORDERS, handler)
        .unwrap()
        .inbox(Inbox::new(store.clone(), "billing").unwrap())
        .options(options.attempts(ATTEMPTS));
    let report = run_until(consumer, |r| r.processed == u64::from(EVENTS)).await;
    assert_eq!(broker.depth("orders") + broker.unacked("orders"), 0);
    Outcome {
        report,
        logs: commit_order(&store),
        failing,
        failures: failures.load(SeqCst),
    }
}

async fn strict_keeps_every_key_in_order(max_batch: usize) {
    let options = options()
        .key_order(KeyOrder::Strict)
        .concurrency(8)
        .max_batch(max_batch);
    let outcome = run(options).await;
    outcome.assert_every_event_once();
    assert_eq!(
        out_of_order(&outcome.logs),
        Vec::<u32>::new(),
        "effects committed out of order"
    );
    assert_eq!(outcome.report.failed, 0, "a delivery was nacked past");
}

async fn serial_reorders_only_what_it_nacked(max_batch: usize) {
    let options = options()
        .key_order(KeyOrder::Serial)
        .concurrency(8)
        .max_batch(max_batch);
    let outcome = run(options).await;
    outcome.assert_every_event_once();
    assert!(outcome.report.failed > 0, "nothing was nacked");
    let late = out_of_order(&outcome.logs);
    let unexpected: Vec<_> = late
        .iter()
        .filter(|id| !outcome.failing.contains(id))
        .collect();
    assert!(
        unexpected.is_empty(),
        "events that never failed committed late: {unexpected:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strict_order_commits_each_key_in_order_one_at_a_time() {
    strict_keeps_every_key_in_order(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strict_order_commits_each_key_in_order_in_batches() {
    strict_keeps_every_key_in_order(16).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serial_order_reorders_only_nacked_events_one_at_a_time() {
    serial_reorders_only_what_it_nacked(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serial_order_reorders_only_nacked_events_in_batches() {
    serial_reorders_only_what_it_nacked(16).await;
}

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
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let cancel = cancel.clone();
        async move {
            consumer.run(cancel).await;
            consumer.report()
        }
    });
    while calls.load(SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    let stopping = Instant::now();
    cancel.cancel();
    let report = task.await.unwrap();
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
