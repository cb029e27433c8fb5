use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::OutboxStore;
use crate::lifecycle::{Step, StepError, repeat};

/// Returns rows whose lease expired (their relay died or stalled) to
/// pending. The crash stays counted, so a row that keeps killing relays is
/// failed by the next relay that claims it.
///
/// ```
/// use std::time::Duration;
/// use tidings_core::memory::MemoryStore;
/// use tidings_core::relay::{Sweeper, SweeperOptions};
///
/// let sweeper = Sweeper::new(MemoryStore::new(), "order-events")
///     .options(SweeperOptions::new().interval(Duration::from_secs(10)));
/// assert_eq!(sweeper.get_options().get_interval(), Duration::from_secs(10));
/// ```
#[derive(Debug, Clone)]
pub struct Sweeper<S> {
    store: S,
    route: String,
    options: SweeperOptions,
}

/// Settings of a [`Sweeper`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SweeperOptions {
    interval: Duration,
    limit: usize,
}

impl SweeperOptions {
    /// Default [`interval`](Self::interval): 5 s.
    pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(5);
    /// Default [`limit`](Self::limit): 1,000 rows.
    pub const DEFAULT_LIMIT: usize = 1000;

    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }
}

crate::settings!(SweeperOptions {
    /// The time between sweeps; default
    /// [`DEFAULT_INTERVAL`](Self::DEFAULT_INTERVAL).
    interval(interval: Duration), get_interval: Duration;
    /// The most rows one sweep returns to pending (at least 1); default
    /// [`DEFAULT_LIMIT`](Self::DEFAULT_LIMIT).
    limit(limit: usize) = limit.max(1), get_limit: usize;
});

impl Default for SweeperOptions {
    fn default() -> Self {
        Self {
            interval: Self::DEFAULT_INTERVAL,
            limit: Self::DEFAULT_LIMIT,
        }
    }
}

impl<S: OutboxStore> Sweeper<S> {
    /// A sweeper for one route, with [`SweeperOptions::default`].
    pub fn new(store: S, route: impl Into<String>) -> Self {
        Self {
            store,
            route: route.into(),
            options: SweeperOptions::default(),
        }
    }

    /// Sets the options.
    pub fn options(mut self, options: SweeperOptions) -> Self {
        self.options = options;
        self
    }

    /// The options.
    pub fn get_options(&self) -> &SweeperOptions {
        &self.options
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
        sweep(&self.store, &self.route, self.options.limit).await
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
        repeat("sweeper", self.options.interval, cancel, || self.sweep()).boxed()
    }
}
