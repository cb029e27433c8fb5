//! One shared relay over many routes of a store.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tidings_core::relay::{Relay, RelayOptions, SharedRelay};
use tidings_core::{Envelope, OrderingMode, OutboxStore, PublishError, Publisher, RetryPolicy};
use tokio_util::sync::CancellationToken;

use super::StoreHarness;
use super::fixtures::{event, keyed, route};

/// Routes of the case, half of them per key.
const ROUTES: u32 = 8;
/// Events staged per route.
const PER_ROUTE: u32 = 60;
/// Ordering keys of each per-key route.
const KEYS: u32 = 5;

/// What the broker received: per destination and ordering key, the
/// numbers published in order, and the publishes it refused.
#[derive(Debug, Default)]
struct Received {
    published: HashMap<(String, Option<String>), Vec<u32>>,
    refused: u32,
    rng: Option<fastrand::Rng>,
}

/// A broker refusing one publish in five for now, recording the rest.
#[derive(Debug, Clone, Default)]
struct Flaky(Arc<Mutex<Received>>);

impl Publisher for Flaky {
    async fn publish(&self, envelope: &Envelope) -> Result<(), PublishError> {
        let mut received = self.0.lock().expect("received");
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
        Ok(())
    }
}

/// One [`SharedRelay`] over several routes, half unordered and half per
/// key, two passes at once, with one publish in five refused for now:
/// every event of every route reaches its own destination exactly once,
/// each key's events in staging order, and every route ends drained.
pub async fn a_shared_relay_drains_many_routes_once_keeping_key_order<H: StoreHarness>(h: &H) {
    let store = h.store().await;
    let retry = RetryPolicy::new()
        .base_delay(Duration::from_millis(5))
        .max_backoff(Duration::from_millis(20));
    let routes: Vec<_> = (0..ROUTES)
        .map(|n| {
            let ordering = match n % 2 {
                0 => OrderingMode::Unordered,
                _ => OrderingMode::PerKey,
            };
            let mut route = route(ordering);
            route.retry = retry;
            route
        })
        .collect();
    for route in &routes {
        let events = (0..PER_ROUTE)
            .map(|n| match route.ordering {
                OrderingMode::PerKey => keyed(route, n, &format!("key-{}", n % KEYS)),
                _ => event(route, n),
            })
            .collect();
        h.commit(&store, events).await;
    }

    let broker = Flaky::default();
    let options = RelayOptions::default()
        .batch_size(16)
        .poll_interval(Duration::from_millis(20));
    let relay = (routes.iter()).fold(SharedRelay::new().passes(2), |shared, route| {
        let relay = Relay::for_route(store.clone(), broker.clone(), route.clone());
        shared.relay(relay.expect("route").options(options))
    });
    let cancel = CancellationToken::new();
    let running = tokio::spawn({
        let cancel = cancel.clone();
        async move { relay.run(cancel).await }
    });
    let published = || -> usize {
        let received = broker.0.lock().expect("received");
        received.published.values().map(Vec::len).sum()
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while published() < (ROUTES * PER_ROUTE) as usize && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cancel.cancel();
    running.await.expect("the relay task").expect("the relay");

    // A copy, so no lock is held across the stats reads below.
    let (refused, published) = {
        let received = broker.0.lock().expect("received");
        (received.refused, received.published.clone())
    };
    assert!(refused > 0, "refusals were injected");
    for route in &routes {
        let destination = route
            .destination
            .as_deref()
            .expect("a destination")
            .to_owned();
        let keys: Vec<Option<String>> = match route.ordering {
            OrderingMode::PerKey => (0..KEYS).map(|k| Some(format!("key-{k}"))).collect(),
            _ => vec![None],
        };
        for key in keys {
            let mut got = published[&(destination.clone(), key.clone())].clone();
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
        let stats = store.stats(&route.name).await.expect("stats");
        assert_eq!(
            (stats.pending, stats.in_flight, stats.failed),
            (0, 0, 0),
            "{stats:?}"
        );
    }
}
