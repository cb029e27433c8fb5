//! Expired events: the relay fails them instead of publishing them, and a
//! requeue does not bring them back to life.

use std::time::{Duration, SystemTime};

use tidings_core::memory::MemoryBroker;
use tidings_core::relay::Relay;
use tidings_core::{OrderingMode, OutboxStore, Requeue, truncate_to_micros};

use super::StoreHarness;
use super::fixtures::{event, route};

/// Of three events, the one whose expiry has passed is failed, and the one
/// expiring later and the one without an expiry are published; requeued,
/// the expired event is failed again.
pub async fn expired_events_are_failed_not_published<H: StoreHarness>(h: &H) {
    let store = h.store().await;
    let route = route(OrderingMode::Unordered);
    let now = SystemTime::now();
    let mut expired = event(&route, 1);
    expired.envelope.expires_at = Some(truncate_to_micros(now - Duration::from_secs(1)));
    let mut later = event(&route, 2);
    later.envelope.expires_at = Some(truncate_to_micros(now + Duration::from_secs(3600)));
    h.commit(&store, vec![expired, later, event(&route, 3)])
        .await;

    let broker = MemoryBroker::new();
    let destination = route.destination.clone().expect("a destination");
    broker.declare_queue(&destination);
    let relay = Relay::for_route(store.clone(), broker.clone(), route.clone()).expect("route");
    let report = relay.drain().await.expect("drain");
    assert_eq!((report.published, report.failed), (2, 1), "{report:?}");
    assert_eq!(broker.depth(&destination), 2);

    let requeued = store
        .requeue_failed(&route.name, Requeue::All)
        .await
        .expect("requeue");
    assert_eq!(requeued, 1);
    let report = relay.drain().await.expect("drain");
    assert_eq!((report.published, report.failed), (0, 1), "{report:?}");
    let stats = store.stats(&route.name).await.expect("stats");
    assert_eq!((stats.pending, stats.failed), (0, 1), "{stats:?}");
}
