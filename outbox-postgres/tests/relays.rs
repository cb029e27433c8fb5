//! Several relays on one outbox: exactly-once settlement, fenced leases and
//! per-key order under concurrency. Where several relays run, half claim
//! leased and half locked, on the same table.

mod support;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use support::{KEYED_EVENTS, ORDER_EVENTS, drop_schema, store_on_with};
use tidings_core::{ClaimRequest, ClaimedBatch, OutboxStore, Outcome, Route, Settlement};
use tidings_postgres::{ClaimMode, PgOutboxStore, Retention};
use tidings_testing::store::settle_all;

const LONG_LEASE: Duration = Duration::from_secs(300);

async fn claim(
    store: &PgOutboxStore,
    route: &Route,
    limit: usize,
    lease: Duration,
) -> tidings_postgres::PgBatch {
    let request = ClaimRequest {
        route,
        limit,
        lease,
    };
    store.claim(request).await.expect("claim")
}

/// The relay store of relay `n`: `store` itself (claiming leased) for even
/// `n`, a store on the same table claiming locked for odd `n`.
fn relay_store(store: &PgOutboxStore, n: u64) -> PgOutboxStore {
    if n % 2 == 0 {
        return store.clone();
    }
    let options = store.options().clone().claim_mode(ClaimMode::Locked);
    PgOutboxStore::new(store.pool().clone(), options).expect("valid names")
}

fn number(record: &tidings_core::OutboxRecord) -> u64 {
    std::str::from_utf8(&record.envelope.payload)
        .unwrap()
        .parse()
        .unwrap()
}

/// Stages `events` in commits of at most 1,000.
async fn stage_all(
    store: &PgOutboxStore,
    events: impl Iterator<Item = (u64, Option<String>)>,
    keyed: bool,
) {
    let events: Vec<_> = events.collect();
    for chunk in events.chunks(1000) {
        let mut ctx = store.begin().await.unwrap();
        for (n, key) in chunk {
            let spec = if keyed { &KEYED_EVENTS } else { &ORDER_EVENTS };
            let staged = ctx.outbox().stage(spec, "test.event", n).unwrap();
            if let Some(key) = key {
                staged.ordering_key(key.clone());
            }
        }
        ctx.commit().await.unwrap();
    }
}

fn published(batch: &impl ClaimedBatch) -> Vec<Settlement> {
    settle_all(batch, Outcome::Published)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::print_stderr)] // reports the drain rate
async fn four_relays_of_both_modes_drain_ten_thousand_events_each_exactly_once() {
    const EVENTS: u64 = 10_000;
    let store = store_on_with(support::pool(8).await, Retention::Delete, ClaimMode::Leased).await;
    stage_all(&store, (0..EVENTS).map(|n| (n, None)), false).await;

    let started = Instant::now();
    let seen: Arc<Mutex<HashMap<u64, u32>>> = Arc::default();
    let relays = (0..4).map(|n| {
        let (store, seen) = (relay_store(&store, n), seen.clone());
        tokio::spawn(async move {
            loop {
                let batch = claim(&store, ORDER_EVENTS.route(), 100, LONG_LEASE).await;
                if batch.records().is_empty() {
                    return;
                }
                {
                    let mut seen = seen.lock().unwrap();
                    for record in batch.records() {
                        *seen.entry(number(record)).or_default() += 1;
                    }
                }
                let settlements = published(&batch);
                let report = batch.settle(settlements).await.expect("settle");
                assert!(report.lost.is_empty(), "no lease expires in this test");
            }
        })
    });
    for relay in relays.collect::<Vec<_>>() {
        relay.await.unwrap();
    }
    let elapsed = started.elapsed();

    let seen = std::mem::take(&mut *seen.lock().unwrap());
    assert_eq!(seen.len() as u64, EVENTS, "every event claimed");
    assert!(seen.values().all(|&n| n == 1), "an event was claimed twice");
    assert_eq!(
        support::row_count(&store).await,
        0,
        "every row published and deleted"
    );
    eprintln!("drained {EVENTS} events with 4 relays in {elapsed:?}");
    drop_schema(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swept_relays_late_mark_is_lost_and_the_new_owner_publishes_once() {
    let store = store_on_with(support::pool(4).await, Retention::Keep, ClaimMode::Leased).await;
    let route = ORDER_EVENTS.route();
    stage_all(&store, [(1, None)].into_iter(), false).await;

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
    drop_schema(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_key_order_holds_with_four_relays_of_both_modes_and_transient_failures() {
    const KEYS: u64 = 20;
    const PER_KEY: u64 = 25;
    let store = store_on_with(support::pool(8).await, Retention::Delete, ClaimMode::Leased).await;
    let route = KEYED_EVENTS.route();
    let events = (0..KEYS * PER_KEY).map(|n| (n, Some(format!("key-{}", n % KEYS))));
    stage_all(&store, events, true).await;

    let in_flight: Arc<Mutex<HashSet<String>>> = Arc::default();
    let order: Arc<Mutex<HashMap<String, Vec<u64>>>> = Arc::default();
    let retries = Arc::new(Mutex::new(0_u32));
    let relays = (0..4).map(|relay| {
        let (store, in_flight, order, retries) = (
            relay_store(&store, relay),
            in_flight.clone(),
            order.clone(),
            retries.clone(),
        );
        tokio::spawn(async move {
            let mut idle = 0;
            let mut rng = fastrand::Rng::with_seed(relay);
            while idle < 20 {
                let batch = claim(&store, route, 8, LONG_LEASE).await;
                if batch.records().is_empty() {
                    idle += 1;
                    tokio::time::sleep(Duration::from_millis(10)).await;
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
                    // One attempt in four fails transiently and is retried.
                    let outcome = if rng.u8(0..4) == 0 {
                        *retries.lock().unwrap() += 1;
                        Outcome::Retry {
                            delay: Duration::from_millis(rng.u64(0..20)),
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
                tokio::time::sleep(Duration::from_millis(2)).await;
                for record in batch.records() {
                    in_flight
                        .lock()
                        .unwrap()
                        .remove(record.envelope.ordering_key.as_deref().unwrap());
                }
                let report = batch.settle(settlements).await.expect("settle");
                assert!(report.lost.is_empty());
            }
        })
    });
    for relay in relays.collect::<Vec<_>>() {
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
    assert!(*retries.lock().unwrap() > 0, "failures were injected");
    assert_eq!(support::row_count(&store).await, 0);
    drop_schema(&store).await;
}
