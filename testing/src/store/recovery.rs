//! Recovering from a relay that died mid-batch.

use std::time::Duration;

use tidings_core::memory::MemoryBroker;
use tidings_core::relay::{Relay, RelayOptions};
use tidings_core::{Envelope, OutboxStore, PublishError};
use tokio_util::sync::CancellationToken;

use super::StoreHarness;
use super::fixtures::{SHORT_LEASE, staged};
use crate::publisher::{PublishEach, PublishOne};

/// A broker that never answers: a relay publishing to it holds its batch
/// until it is killed.
#[derive(Debug, Clone, Copy)]
struct Unanswering;

impl PublishOne for Unanswering {
    async fn publish_one(&self, _envelope: &Envelope) -> Result<(), PublishError> {
        std::future::pending().await
    }
}

/// A relay killed while its batch is out (its task aborted, leaving its
/// claim as a crash leaves it) holds nothing for long: a relay started
/// alone after it, with no sweeper step beside it, relays every row.
pub async fn a_relay_killed_mid_batch_is_recovered_by_the_next_relay_alone<H: StoreHarness>(h: &H) {
    let (store, route) = staged(h, 1..=20).await;
    let config = RelayOptions::default()
        .lease(SHORT_LEASE)
        .poll_interval(Duration::from_millis(50));

    let dying = Relay::for_route(store.clone(), PublishEach::new(Unanswering), route.clone())
        .expect("route")
        .options(config);
    let killed = tokio::spawn(async move { dying.run(CancellationToken::new()).await });
    wait_for(&store, &route.name, |in_flight| in_flight > 0).await;
    killed.abort();
    let _ = killed.await;
    // The lease runs out before the next relay starts, as it would while a
    // crashed process restarts.
    tokio::time::sleep(SHORT_LEASE * 2).await;

    let broker = MemoryBroker::new();
    let destination = route.destination.clone().expect("a destination");
    broker.declare_queue(&destination);
    let relay = Relay::for_route(store.clone(), broker.clone(), route.clone())
        .expect("route")
        .options(config);
    let cancel = CancellationToken::new();
    let running = tokio::spawn({
        let cancel = cancel.clone();
        async move { relay.run(cancel).await }
    });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while broker.depth(&destination) < 20 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    cancel.cancel();
    running.await.expect("relay task").expect("relay run");
    assert_eq!(broker.depth(&destination), 20, "rows left behind");
    let stats = store.stats(&route.name).await.expect("stats");
    assert_eq!((stats.pending, stats.in_flight, stats.failed), (0, 0, 0));
}

/// Waits up to 10 s until the route's in-flight count satisfies `held`.
async fn wait_for<S: OutboxStore>(store: &S, route: &str, held: impl Fn(u64) -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let stats = store.stats(route).await.expect("stats");
        if held(stats.in_flight) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "nothing claimed: {stats:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
