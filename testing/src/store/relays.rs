//! Several relays on one outbox: each event settled once, fenced leases,
//! and per-key order while relays race and publishes fail.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tidings_core::{ClaimedBatch, OrderingMode, OutboxStore, Outcome, Route, Settlement};

use super::StoreHarness;
use super::fixtures::{
    claim, claim_leased, event, keyed, next_claim, numbers, route, settle_all, staged,
};

/// How many relays race in these cases.
const RELAYS: u64 = 4;

/// Commits `events` in transactions of at most 1,000.
async fn commit_all<H: StoreHarness>(
    h: &H,
    store: &H::Store,
    events: Vec<tidings_core::StagedEvent>,
) {
    let mut events = events.into_iter().peekable();
    while events.peek().is_some() {
        h.commit(store, events.by_ref().take(1000).collect()).await;
    }
}

/// Nothing of `route` is pending or in flight.
async fn drained<S: OutboxStore>(store: &S, route: &Route) {
    let stats = store.stats(&route.name).await.expect("stats");
    assert_eq!((stats.pending, stats.in_flight), (0, 0), "{stats:?}");
}

/// Relays on peers of one store (as separate processes would have them)
/// claim and publish until the route is empty: every event is claimed
/// once, and no settlement is refused.
pub async fn several_relays_drain_every_event_exactly_once<H: StoreHarness>(h: &H) {
    let store = h.store().await;
    let route = route(OrderingMode::Unordered);
    let events = (0..H::DRAIN_EVENTS).map(|n| event(&route, n)).collect();
    commit_all(h, &store, events).await;

    let seen: Arc<Mutex<HashMap<u32, u32>>> = Arc::default();
    let mut relays = Vec::new();
    for n in 0..RELAYS {
        let (peer, route, seen) = (h.peer(&store, n).await, route.clone(), seen.clone());
        relays.push(tokio::spawn(async move {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
            loop {
                let batch = claim(&peer, &route, 100).await;
                if batch.records().is_empty() {
                    // An empty claim may only mean the rows left are held
                    // by the other relays' claims: stop once none is left.
                    let stats = peer.stats(&route.name).await.expect("stats");
                    if stats.pending + stats.in_flight == 0 {
                        return;
                    }
                    assert!(tokio::time::Instant::now() < deadline, "left {stats:?}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
                for number in numbers(&batch) {
                    *seen.lock().expect("seen").entry(number).or_default() += 1;
                }
                let settlements = settle_all(&batch, Outcome::Published);
                let report = batch.settle(settlements).await.expect("settle");
                assert!(report.lost.is_empty(), "no lease expires in this case");
            }
        }));
    }
    for relay in relays {
        relay.await.expect("a relay");
    }
    let seen = std::mem::take(&mut *seen.lock().expect("seen"));
    assert_eq!(seen.len(), H::DRAIN_EVENTS as usize, "every event claimed");
    assert!(seen.values().all(|&n| n == 1), "an event was claimed twice");
    drained(&store, &route).await;
}

/// A relay whose lease ran out and was swept marks its row too late: the
/// mark is lost, and the row's new owner publishes it once.
pub async fn a_swept_relays_late_mark_is_lost_and_the_new_owner_publishes_once<H: StoreHarness>(
    h: &H,
) {
    let (store, route) = staged(h, [1]).await;

    let old = claim_leased(&store, &route, 10, Duration::from_millis(200)).await;
    assert_eq!(old.records().len(), 1);
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(store.sweep_expired(&route.name, 100).await.unwrap(), 1);
    let peer = h.peer(&store, 1).await;
    let new = claim(&peer, &route, 10).await;
    assert_eq!(new.records().len(), 1);
    assert_eq!(new.records()[0].crashes(), 1, "the sweep counted a crash");

    let late = settle_all(&old, Outcome::Published);
    let event_id = late[0].event_id;
    let report = old.settle(late).await.unwrap();
    assert_eq!((report.published, report.lost.clone()), (0, vec![event_id]));

    let settlements = settle_all(&new, Outcome::Published);
    let report = new.settle(settlements).await.unwrap();
    assert_eq!((report.published, report.lost.len()), (1, 0));
    drained(&store, &route).await;
    assert!(claim(&store, &route, 10).await.records().is_empty());
}

/// What the racing per-key relays saw: keys in flight, each key's
/// published numbers in order, and the retries injected.
#[derive(Default)]
struct KeyLog {
    in_flight: Mutex<HashSet<String>>,
    published: Mutex<HashMap<String, Vec<u32>>>,
    retries: Mutex<u32>,
}

/// Relays racing on a per-key route, one publish in four failing
/// transiently: no key is ever in flight twice, and each key's events are
/// published in staging order.
pub async fn per_key_order_holds_with_several_relays_and_transient_failures<H: StoreHarness>(
    h: &H,
) {
    const KEYS: u32 = 20;
    const PER_KEY: u32 = 25;
    let store = h.store().await;
    let route = route(OrderingMode::PerKey);
    let events = (0..KEYS * PER_KEY)
        .map(|n| keyed(&route, n, &format!("key-{}", n % KEYS)))
        .collect();
    commit_all(h, &store, events).await;

    let log = Arc::new(KeyLog::default());
    let mut relays = Vec::new();
    for n in 0..RELAYS {
        let (peer, route, log) = (h.peer(&store, n).await, route.clone(), log.clone());
        relays.push(tokio::spawn(async move {
            let mut rng = fastrand::Rng::with_seed(n);
            let idle = (20, Duration::from_millis(10));
            while let Some(batch) = next_claim(&peer, &route, 8, idle).await {
                let settlements = publish_keyed(&batch, &log, &mut rng);
                tokio::time::sleep(Duration::from_millis(2)).await;
                for record in batch.records() {
                    let key = record.envelope.ordering_key.as_deref().expect("a key");
                    log.in_flight.lock().expect("in flight").remove(key);
                }
                let report = batch.settle(settlements).await.expect("settle");
                assert!(report.lost.is_empty());
            }
        }));
    }
    for relay in relays {
        relay.await.expect("a relay");
    }

    let published = std::mem::take(&mut *log.published.lock().expect("published"));
    for key in 0..KEYS {
        let staged: Vec<u32> = (0..PER_KEY).map(|i| i * KEYS + key).collect();
        assert_eq!(
            published[&format!("key-{key}")],
            staged,
            "key-{key} out of order"
        );
    }
    assert!(
        *log.retries.lock().expect("retries") > 0,
        "failures were injected"
    );
    drained(&store, &route).await;
}

/// Publishes a claimed per-key batch, one row in four failing transiently.
fn publish_keyed<B: ClaimedBatch>(
    batch: &B,
    log: &KeyLog,
    rng: &mut fastrand::Rng,
) -> Vec<Settlement> {
    let mut settlements = Vec::new();
    for (record, number) in batch.records().iter().zip(numbers(batch)) {
        let key = record.envelope.ordering_key.clone().expect("a key");
        let first = log.in_flight.lock().expect("in flight").insert(key.clone());
        assert!(first, "{key} in flight twice");
        let outcome = if rng.u8(0..4) == 0 {
            *log.retries.lock().expect("retries") += 1;
            Outcome::Retry {
                delay: Duration::from_millis(rng.u64(0..20)),
                error: "broker busy".into(),
            }
        } else {
            let mut published = log.published.lock().expect("published");
            published.entry(key).or_default().push(number);
            Outcome::Published
        };
        settlements.push(Settlement {
            event_id: record.envelope.event_id,
            outcome,
        });
    }
    settlements
}
