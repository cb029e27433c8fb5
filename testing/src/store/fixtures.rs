//! Events and routes the suites build on.

use std::time::Duration;

use bytes::Bytes;
use tidings_core::{
    ClaimCursor, ClaimRequest, ClaimedBatch, Envelope, Hlc, OrderingMode, OutboxStore, Outcome,
    RetryPolicy, Route, Settlement, StagedEvent, StoreError,
};
use uuid::Uuid;

use super::StoreHarness;
use crate::eventually::eventually;
use crate::names::unique_name;

/// The lease the suites claim with when they let it expire.
pub const SHORT_LEASE: Duration = Duration::from_millis(300);
/// The lease the suites claim with when it must not expire.
pub const LONG_LEASE: Duration = Duration::from_secs(60);

/// A fresh route of its own.
pub fn route(ordering: OrderingMode) -> Route {
    Route {
        name: unique_name("route").into(),
        destination: Some(unique_name("queue").into()),
        ordering,
        retry: RetryPolicy::new(),
        hlc_ordering: false,
    }
}

/// A fresh store of `h` with the events `numbers` committed in one
/// transaction on a fresh unordered route; returns both.
pub async fn staged<H: StoreHarness>(
    h: &H,
    numbers: impl IntoIterator<Item = u32>,
) -> (H::Store, Route) {
    let store = h.store().await;
    let route = route(OrderingMode::Unordered);
    let events = numbers.into_iter().map(|n| event(&route, n)).collect();
    h.commit(&store, events).await;
    (store, route)
}

/// A fresh store of `h` with events numbered from 1 committed in one
/// transaction on a fresh per-key route, each keyed by its entry of
/// `keys` (`None`: no key); returns both.
pub async fn staged_per_key<H: StoreHarness>(h: &H, keys: &[Option<&str>]) -> (H::Store, Route) {
    let store = h.store().await;
    let route = route(OrderingMode::PerKey);
    let events = (1..).zip(keys).map(|(n, key)| match key {
        Some(key) => keyed(&route, n, key),
        None => event(&route, n),
    });
    h.commit(&store, events.collect()).await;
    (store, route)
}

/// An event of `route` whose JSON payload is `n`.
pub fn event(route: &Route, n: u32) -> StagedEvent {
    let envelope = Envelope::new(
        route.name.as_ref(),
        route.destination.as_deref().unwrap_or_default(),
        "test.event",
        Bytes::from(n.to_string()),
        "application/json",
    );
    StagedEvent {
        envelope,
        delay: None,
    }
}

/// An event with an ordering key.
pub fn keyed(route: &Route, n: u32, key: &str) -> StagedEvent {
    let mut event = event(route, n);
    event.envelope.ordering_key = Some(key.to_owned());
    event
}

/// An event with every optional field set.
pub fn full_event(route: &Route) -> StagedEvent {
    let mut event = keyed(route, 1, "key-1");
    let env = &mut event.envelope;
    env.headers.insert(
        "traceparent".into(),
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into(),
    );
    env.headers
        .insert("x-note".into(), "quoted \"value\" with ünicode".into());
    env.correlation_id = Some("corr-1".into());
    env.causation_id = Some("cause-1".into());
    env.tenant_id = Some("tenant-1".into());
    env.hlc = Some(Hlc::from_u64(42 << 16));
    env.expires_at = Some(tidings_core::truncate_to_micros(
        std::time::SystemTime::now() + Duration::from_secs(24 * 3600),
    ));
    event
}

/// The payload numbers of a batch's records, in claim order.
pub fn numbers<B: ClaimedBatch>(batch: &B) -> Vec<u32> {
    batch
        .records()
        .iter()
        .map(|r| {
            std::str::from_utf8(&r.envelope.payload)
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect()
}

/// The event ids of a batch's records, in claim order.
pub fn event_ids<B: ClaimedBatch>(batch: &B) -> Vec<Uuid> {
    batch
        .records()
        .iter()
        .map(|r| r.envelope.event_id)
        .collect()
}

/// The rows of `batch` settled with `outcomes`, in claim order.
pub fn settle_each<B: ClaimedBatch>(
    batch: &B,
    outcomes: impl IntoIterator<Item = Outcome>,
) -> Vec<Settlement> {
    event_ids(batch)
        .into_iter()
        .zip(outcomes)
        .map(|(event_id, outcome)| Settlement { event_id, outcome })
        .collect()
}

/// The same outcome for every row of `batch`.
pub fn settle_all<B: ClaimedBatch>(batch: &B, outcome: Outcome) -> Vec<Settlement> {
    batch
        .records()
        .iter()
        .map(|r| Settlement {
            event_id: r.envelope.event_id,
            outcome: outcome.clone(),
        })
        .collect()
}

/// The next claim of up to `limit` rows that is not empty, waiting
/// `pause` after each empty one; `None` once `idle` claims in a row came
/// back empty.
pub async fn next_claim<S: OutboxStore>(
    store: &S,
    route: &Route,
    limit: usize,
    (idle, pause): (u32, Duration),
) -> Option<S::Batch> {
    for _ in 0..idle {
        let batch = claim(store, route, limit).await;
        if !batch.records().is_empty() {
            return Some(batch);
        }
        tokio::time::sleep(pause).await;
    }
    None
}

/// Claims up to `limit` rows with a long lease.
pub async fn claim<S: OutboxStore>(store: &S, route: &Route, limit: usize) -> S::Batch {
    claim_leased(store, route, limit, LONG_LEASE).await
}

/// Claims up to `limit` rows with a long lease, past `after` where the
/// store goes on past cursors.
pub async fn claim_after<S: OutboxStore>(
    store: &S,
    route: &Route,
    limit: usize,
    after: Option<ClaimCursor>,
) -> S::Batch {
    claimed(store, request(route, limit, LONG_LEASE, after)).await
}

/// Claims up to `limit` rows with the given lease.
pub async fn claim_leased<S: OutboxStore>(
    store: &S,
    route: &Route,
    limit: usize,
    lease: Duration,
) -> S::Batch {
    claimed(store, request(route, limit, lease, None)).await
}

/// Claims up to `limit` rows with a long lease and returns the store's
/// answer as it is, for a test of a claim that fails.
///
/// # Errors
///
/// The store's [`StoreError`] for the claim, unchanged.
pub async fn try_claim<S: OutboxStore>(
    store: &S,
    route: &Route,
    limit: usize,
) -> Result<S::Batch, StoreError> {
    store.claim(request(route, limit, LONG_LEASE, None)).await
}

/// The batch `request` claims; panics if the claim fails.
async fn claimed<S: OutboxStore>(store: &S, request: ClaimRequest<'_>) -> S::Batch {
    store.claim(request).await.expect("claim")
}

/// A claim of up to `limit` rows of `route` under `lease`, past `after`.
fn request(
    route: &Route,
    limit: usize,
    lease: Duration,
    after: Option<ClaimCursor>,
) -> ClaimRequest<'_> {
    ClaimRequest {
        route,
        limit,
        lease,
        after,
    }
}

/// Claims until a batch is not empty, or panics after `timeout`.
pub async fn claim_within<S: OutboxStore>(
    store: &S,
    route: &Route,
    limit: usize,
    timeout: Duration,
) -> S::Batch {
    let claimed = || claim(store, route, limit);
    let batch = eventually(timeout, claimed, |batch| !batch.records().is_empty()).await;
    assert!(
        !batch.records().is_empty(),
        "nothing became claimable within {timeout:?}"
    );
    batch
}
