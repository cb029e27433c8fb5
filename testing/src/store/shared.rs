//! One shared relay over many routes of a store, and over the stores of
//! several tenants.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tidings_core::relay::{Relay, RelayOptions, SharedRelay, Tenant};
use tidings_core::{
    Backoff, Envelope, OrderingMode, OutboxStore, PublishError, RetryPolicy, Route,
};
use tokio_util::sync::CancellationToken;

use super::StoreHarness;
use super::fixtures::{event, keyed, route};
use crate::publisher::{PublishEach, PublishOne};

/// Events staged per route.
const PER_ROUTE: u32 = 60;
/// Ordering keys of each per-key route.
const KEYS: u32 = 5;
/// How long the relay may take to publish everything.
const DEADLINE: Duration = Duration::from_secs(120);

/// What the broker received: per destination and ordering key, the
/// numbers published in order; per destination, the tenants stamped; and
/// how many publishes it refused.
#[derive(Debug, Default)]
struct Received {
    published: HashMap<(String, Option<String>), Vec<u32>>,
    tenants: HashMap<String, Vec<Option<String>>>,
    refused: u32,
    rng: Option<fastrand::Rng>,
}

/// A broker refusing one publish in five for now, recording the rest.
#[derive(Debug, Clone, Default)]
struct Flaky(Arc<Mutex<Received>>);

impl Flaky {
    fn received(&self) -> std::sync::MutexGuard<'_, Received> {
        self.0.lock().expect("received")
    }

    fn published(&self) -> usize {
        self.received().published.values().map(Vec::len).sum()
    }

    /// Waits until `count` events are published, or the deadline.
    async fn wait_for(&self, count: usize) {
        let deadline = tokio::time::Instant::now() + DEADLINE;
        while self.published() < count && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl PublishOne for Flaky {
    async fn publish_one(&self, envelope: &Envelope) -> Result<(), PublishError> {
        let mut received = self.received();
        let rng = received
            .rng
            .get_or_insert_with(|| fastrand::Rng::with_seed(7));
        if rng.u8(0..5) == 0 {
            received.refused += 1;
            return Err(PublishError::Refused {
                reason: "busy".into(),
            });
        }
        let number = std::str::from_utf8(&envelope.payload)
            .ok()
            .and_then(|n| n.parse().ok())
            .expect("a numbered event");
        let key = (envelope.destination.clone(), envelope.ordering_key.clone());
        received.published.entry(key).or_default().push(number);
        let tenants = received.tenants.entry(envelope.destination.clone());
        tenants.or_default().push(envelope.tenant_id.clone());
        Ok(())
    }
}

/// Stages `routes` fresh routes on `store`, alternately unordered and per
/// key, [`PER_ROUTE`] events each, retrying fast; returns them.
async fn staged_routes<H: StoreHarness>(h: &H, store: &H::Store, routes: u32) -> Vec<Route> {
    let retry = RetryPolicy::new().backoff(Backoff::new(
        Duration::from_millis(5),
        Duration::from_millis(20),
    ));
    let mut staged = Vec::new();
    for n in 0..routes {
        let ordering = match n % 2 {
            0 => OrderingMode::Unordered,
            _ => OrderingMode::PerKey,
        };
        let mut route = route(ordering);
        route.retry = retry;
        let events = (0..PER_ROUTE)
            .map(|n| match ordering {
                OrderingMode::PerKey => keyed(&route, n, &format!("key-{}", n % KEYS)),
                _ => event(&route, n),
            })
            .collect();
        h.commit(store, events).await;
        staged.push(route);
    }
    staged
}

/// The relays of `routes` on `store`, publishing to `broker`.
fn relays<S: OutboxStore>(
    store: &S,
    broker: &Flaky,
    routes: &[Route],
) -> Vec<Relay<S, PublishEach<Flaky>>> {
    let options = RelayOptions::default()
        .batch_size(16)
        .poll_interval(Duration::from_millis(20));
    (routes.iter())
        .map(|route| {
            let relay = Relay::for_route(
                store.clone(),
                PublishEach::new(broker.clone()),
                route.clone(),
            );
            relay.expect("route").options(options)
        })
        .collect()
}

/// Every event of `routes` reached its route's destination exactly once,
/// each key's in staging order, stamped `tenant`; nothing is left once
/// the last batch is settled.
async fn assert_relayed<S: OutboxStore>(
    broker: &Flaky,
    store: &S,
    routes: &[Route],
    tenant: Option<&str>,
) {
    for route in routes {
        let destination = route.destination.as_deref().expect("a destination");
        let keys: Vec<Option<String>> = match route.ordering {
            OrderingMode::PerKey => (0..KEYS).map(|k| Some(format!("key-{k}"))).collect(),
            _ => vec![None],
        };
        {
            let received = broker.received();
            for key in keys {
                let mut got = received.published[&(destination.to_owned(), key.clone())].clone();
                let staged: Vec<u32> = (0..PER_ROUTE)
                    .filter(|n| key.is_none() || key == Some(format!("key-{}", n % KEYS)))
                    .collect();
                if key.is_none() {
                    got.sort_unstable();
                }
                assert_eq!(
                    got, staged,
                    "{destination} {key:?}: lost, doubled or out of order"
                );
            }
            let stamped = &received.tenants[destination];
            assert!(
                stamped.iter().all(|t| t.as_deref() == tenant),
                "{destination}: tenants {stamped:?}, not {tenant:?}"
            );
        }
        // The last batch may still be settling while the relay runs.
        let deadline = tokio::time::Instant::now() + DEADLINE;
        loop {
            let stats = store.stats(&route.name).await.expect("stats");
            let left = (stats.pending, stats.in_flight, stats.failed);
            if left == (0, 0, 0) {
                break;
            }
            assert!(tokio::time::Instant::now() < deadline, "{stats:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// One [`SharedRelay`] over eight routes, half unordered and half per key,
/// two passes at once, with one publish in five refused for now: every
/// event of every route reaches its own destination exactly once, each
/// key's events in staging order, and every route ends drained.
pub async fn a_shared_relay_drains_many_routes_once_keeping_key_order<H: StoreHarness>(h: &H) {
    let store = h.store().await;
    let routes = staged_routes(h, &store, 8).await;
    let broker = Flaky::default();
    let relay = (relays(&store, &broker, &routes).into_iter())
        .fold(SharedRelay::new().passes(2), SharedRelay::relay);
    let cancel = CancellationToken::new();
    let running = tokio::spawn({
        let cancel = cancel.clone();
        async move { relay.run(cancel).await }
    });
    broker.wait_for(routes.len() * PER_ROUTE as usize).await;
    cancel.cancel();
    running.await.expect("the relay task").expect("the relay");

    assert!(broker.received().refused > 0, "refusals were injected");
    assert_relayed(&broker, &store, &routes, None).await;
}

/// One [`SharedRelay`] over the stores of three tenants, two added while
/// it runs: each tenant's events reach their destinations exactly once and
/// in key order, stamped with the tenant the store serves. Once a tenant
/// is removed, what it stages stays in its store.
pub async fn a_shared_relay_serves_tenants_added_and_removed_while_it_runs<H: StoreHarness>(h: &H) {
    const TENANTS: usize = 3;
    let broker = Flaky::default();
    let mut tenants = Vec::new();
    for n in 0..TENANTS {
        let store = h.store().await;
        let routes = staged_routes(h, &store, 2).await;
        tenants.push((format!("tenant-{n}"), store, routes));
    }
    let tenant_relays = |(id, store, routes): &(String, H::Store, Vec<Route>)| {
        let tenant = Tenant::new(id.as_str()).stamped();
        let relays = relays(store, &broker, routes).into_iter();
        relays.map(move |relay| relay.tenant(tenant.clone()))
    };
    let relay = tenant_relays(&tenants[0]).fold(SharedRelay::new().passes(2), SharedRelay::relay);
    let handle = relay.handle();
    let cancel = CancellationToken::new();
    let running = tokio::spawn({
        let cancel = cancel.clone();
        async move { relay.run(cancel).await }
    });
    for tenant in &tenants[1..] {
        tenant_relays(tenant).for_each(|relay| handle.add(relay));
    }
    let all: usize = tenants
        .iter()
        .map(|(_, _, r)| r.len() * PER_ROUTE as usize)
        .sum();
    broker.wait_for(all).await;
    for (id, store, routes) in &tenants {
        assert_relayed(&broker, store, routes, Some(id)).await;
    }

    let (id, store, routes) = &tenants[0];
    handle.remove_tenant(id);
    // The removal takes effect at the relay's next turn.
    tokio::time::sleep(Duration::from_millis(200)).await;
    h.commit(store, vec![event(&routes[0], PER_ROUTE)]).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    cancel.cancel();
    running.await.expect("the relay task").expect("the relay");
    assert_eq!(
        broker.published(),
        all,
        "a removed tenant's event was published"
    );
    let stats = store.stats(&routes[0].name).await.expect("stats");
    assert_eq!(stats.pending, 1, "{stats:?}");
}
