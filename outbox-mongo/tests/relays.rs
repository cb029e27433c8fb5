//! Several relays on one outbox, each with its own client as separate
//! processes would have: each event published exactly once, fenced
//! leases, and per-key order under concurrency.

mod support;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use support::{KEYED_EVENTS, ORDER_EVENTS, drop_collections, outbox_count, store};
use tidings_core::relay::{Relay, RelayOptions};
use tidings_core::{
    ClaimRequest, ClaimedBatch, Envelope, OutboxStore, Outcome, PublishError, Publisher, Route,
    Settlement,
};
use tidings_mongo::{MongoBatch, MongoOutboxStore, Retention};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

const LONG_LEASE: Duration = Duration::from_secs(300);

/// A broker stand-in counting how often each event was published.
#[derive(Debug, Clone, Default)]
struct Recorder {
    published: Arc<Mutex<HashMap<Uuid, u32>>>,
}

impl Publisher for Recorder {
    async fn publish(&self, envelope: &Envelope) -> Result<(), PublishError> {
        *self
            .published
            .lock()
            .unwrap()
            .entry(envelope.event_id)
            .or_default() += 1;
        Ok(())
    }
}

async fn claim(
    store: &MongoOutboxStore,
    route: &Route,
    limit: usize,
    lease: Duration,
) -> MongoBatch {
    let request = ClaimRequest {
        route,
        limit,
        lease,
    };
    store.claim(request).await.expect("claim")
}

/// Another process's view of the same outbox: its own client and
/// connections, the same collections.
async fn replica(store: &MongoOutboxStore) -> MongoOutboxStore {
    MongoOutboxStore::new(support::database().await, store.options().clone()).unwrap()
}

fn number(record: &tidings_core::OutboxRecord) -> u64 {
    std::str::from_utf8(&record.envelope.payload)
        .unwrap()
        .parse()
        .unwrap()
}

fn published(batch: &impl ClaimedBatch) -> Vec<Settlement> {
    batch
        .records()
        .iter()
        .map(|r| Settlement {
            event_id: r.envelope.event_id,
            outcome: Outcome::Published,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_relays_drain_five_hundred_events_each_exactly_once() {
    const EVENTS: u64 = 500;
    let store = store(Retention::Delete).await;
    let mut ctx = store.begin().await.unwrap();
    for n in 0..EVENTS {
        ctx.outbox().stage(&ORDER_EVENTS, "test.event", &n).unwrap();
    }
    ctx.commit().await.unwrap();

    let recorder = Recorder::default();
    let cancel = CancellationToken::new();
    let config = RelayOptions::default()
        .batch_size(40)
        .poll_interval(Duration::from_millis(100));
    let mut relays = Vec::new();
    for _ in 0..4 {
        let relay = Relay::new(replica(&store).await, recorder.clone(), &ORDER_EVENTS)
            .unwrap()
            .options(config);
        let cancel = cancel.clone();
        relays.push(tokio::spawn(async move { relay.run(cancel).await }));
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    while outbox_count(&store).await > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the relays did not drain the outbox"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    cancel.cancel();
    for relay in relays {
        relay.await.unwrap().expect("no relay failed");
    }

    let published = std::mem::take(&mut *recorder.published.lock().unwrap());
    assert_eq!(published.len() as u64, EVENTS, "every event published");
    assert!(
        published.values().all(|&n| n == 1),
        "an event was published twice"
    );
    drop_collections(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swept_relays_late_mark_is_lost_and_the_new_owner_publishes_once() {
    let store = store(Retention::Keep).await;
    let route = ORDER_EVENTS.route();
    let mut ctx = store.begin().await.unwrap();
    ctx.outbox().stage(&ORDER_EVENTS, "test.event", &1).unwrap();
    ctx.commit().await.unwrap();

    let old = claim(&store, route, 10, Duration::from_millis(200)).await;
    assert_eq!(old.records().len(), 1);
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(store.sweep_expired(&route.name, 100).await.unwrap(), 1);
    let new = claim(&store, route, 10, LONG_LEASE).await;
    assert_eq!(new.records().len(), 1);
    assert_eq!(new.records()[0].crashes(), 1);

    let late = published(&old);
    let event_id = late[0].event_id;
    let report = old.settle(late).await.unwrap();
    assert_eq!(report.lost, vec![event_id]);
    assert_eq!(report.published, 0);

    let settlements = published(&new);
    let report = new.settle(settlements).await.unwrap();
    assert_eq!((report.published, report.lost.len()), (1, 0));
    let stats = store.stats(&route.name).await.unwrap();
    assert_eq!((stats.published, stats.in_flight, stats.pending), (1, 0, 0));
    assert!(
        claim(&store, route, 10, LONG_LEASE)
            .await
            .records()
            .is_empty()
    );
    drop_collections(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_key_order_holds_with_four_relays_and_transient_failures() {
    const KEYS: u64 = 8;
    const PER_KEY: u64 = 8;
    let store = store(Retention::Delete).await;
    let route = KEYED_EVENTS.route();
    let mut ctx = store.begin().await.unwrap();
    for n in 0..KEYS * PER_KEY {
        ctx.outbox()
            .stage(&KEYED_EVENTS, "test.event", &n)
            .unwrap()
            .ordering_key(format!("key-{}", n % KEYS));
    }
    ctx.commit().await.unwrap();

    let in_flight: Arc<Mutex<HashSet<String>>> = Arc::default();
    let order: Arc<Mutex<HashMap<String, Vec<u64>>>> = Arc::default();
    let mut relays = Vec::new();
    for relay in 0..4u64 {
        let (store, in_flight, order) = (replica(&store).await, in_flight.clone(), order.clone());
        relays.push(tokio::spawn(async move {
            let mut idle = 0;
            let mut attempt = relay;
            while idle < 10 {
                let batch = claim(&store, route, 4, LONG_LEASE).await;
                if batch.records().is_empty() {
                    idle += 1;
                    tokio::time::sleep(Duration::from_millis(30)).await;
                    continue;
                }
                idle = 0;
                let mut settlements = Vec::new();
                for record in batch.records() {
                    let key = record.envelope.ordering_key.clone().unwrap();
                    assert!(
                        in_flight.lock().unwrap().insert(key.clone()),
                        "{key} in flight twice"
                    );
                    // Every fifth attempt fails transiently and is retried.
                    attempt += 1;
                    let outcome = if attempt % 5 == 0 {
                        Outcome::Retry {
                            delay: Duration::from_millis(20),
                            error: "broker busy".into(),
                        }
                    } else {
                        order
                            .lock()
                            .unwrap()
                            .entry(key)
                            .or_default()
                            .push(number(record));
                        Outcome::Published
                    };
                    settlements.push(Settlement {
                        event_id: record.envelope.event_id,
                        outcome,
                    });
                }
                for record in batch.records() {
                    in_flight
                        .lock()
                        .unwrap()
                        .remove(record.envelope.ordering_key.as_deref().unwrap());
                }
                let report = batch.settle(settlements).await.expect("settle");
                assert!(report.lost.is_empty());
            }
        }));
    }
    for relay in relays {
        relay.await.unwrap();
    }

    let order = std::mem::take(&mut *order.lock().unwrap());
    for key in 0..KEYS {
        let expected: Vec<u64> = (0..PER_KEY).map(|i| i * KEYS + key).collect();
        assert_eq!(
            order[&format!("key-{key}")],
            expected,
            "key-{key} out of order"
        );
    }
    assert_eq!(outbox_count(&store).await, 0);
    drop_collections(&store).await;
}
