use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::OutboxStore;
use crate::lifecycle::{Step, StepError, repeat};

/// Returns rows whose lease expired (their relay died or stalled) to
/// pending. The crash stays counted, so a row that keeps killing relays is
/// failed by the next relay that claims it.
#[derive(Debug, Clone)]
pub struct Sweeper<S> {
    store: S,
    route: String,
    interval: Duration,
    limit: usize,
}

impl<S: OutboxStore> Sweeper<S> {
    /// Default time between sweeps.
    pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(5);
    /// Default rows returned per sweep.
    pub const DEFAULT_LIMIT: usize = 1000;

    /// A sweeper for one route.
    pub fn new(store: S, route: impl Into<String>) -> Self {
        Self {
            store,
            route: route.into(),
            interval: Self::DEFAULT_INTERVAL,
            limit: Self::DEFAULT_LIMIT,
        }
    }

    /// Sets the time between sweeps.
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// Sets the rows returned per sweep.
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit.max(1);
        self
    }

    /// One sweep; returns how many rows went back to pending.
    ///
    /// # Errors
    ///
    /// [`StoreError::Unavailable`](crate::StoreError::Unavailable) or
    /// [`StoreError::Timeout`](crate::StoreError::Timeout) when the database
    /// cannot be reached in time; [`StoreError::Conflict`](crate::StoreError::Conflict)
    /// when a concurrent transaction conflicts; [`StoreError::Schema`](crate::StoreError::Schema)
    /// when the outbox table is missing; [`StoreError::Backend`](crate::StoreError::Backend)
    /// for any other database error.
    pub async fn sweep(&self) -> Result<u64, crate::StoreError> {
        sweep(&self.store, &self.route, self.limit).await
    }
}

/// Returns up to `limit` rows of `route` whose claims died to pending.
pub(super) async fn sweep<S: OutboxStore>(
    store: &S,
    route: &str,
    limit: usize,
) -> Result<u64, crate::StoreError> {
    let swept = store.sweep_expired(route, limit).await?;
    if swept > 0 {
        tracing::warn!(outbox.route = %route, swept, "returned rows with expired leases to pending");
    }
    Ok(swept)
}

impl<S: OutboxStore> Step for Sweeper<S> {
    fn run(&self, cancel: CancellationToken) -> BoxFuture<'_, Result<(), StepError>> {
        async move {
            repeat("sweeper", self.interval, &cancel, || async {
                self.sweep().await.map(drop)
            })
            .await
        }
        .boxed()
    }
}
