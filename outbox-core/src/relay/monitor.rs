use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use metrics::Label;
use tokio_util::sync::CancellationToken;

use super::Tenant;
use crate::OutboxStore;
use crate::lifecycle::{Step, StepError, repeat};

/// Publishes a route's backlog as gauges through the `metrics` facade:
/// `tidings_outbox_pending`, `tidings_outbox_in_flight`,
/// `tidings_outbox_failed` and `tidings_outbox_oldest_pending_seconds`,
/// each labelled with the route (and the tenant, when it has one).
///
/// ```
/// use std::time::Duration;
/// use tidings_core::memory::MemoryStore;
/// use tidings_core::relay::{Monitor, MonitorOptions};
///
/// let monitor = Monitor::new(MemoryStore::new(), "order-events")
///     .options(MonitorOptions::new().interval(Duration::from_secs(60)));
/// assert_eq!(monitor.get_options().get_interval(), Duration::from_secs(60));
/// ```
#[derive(Debug, Clone)]
pub struct Monitor<S> {
    store: S,
    route: String,
    labels: Vec<Label>,
    options: MonitorOptions,
}

/// Settings of a [`Monitor`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MonitorOptions {
    interval: Duration,
}

impl MonitorOptions {
    /// Default [`interval`](Self::interval): 15 s.
    pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(15);

    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }
}

crate::settings!(MonitorOptions {
    /// The time between two readings; default
    /// [`DEFAULT_INTERVAL`](Self::DEFAULT_INTERVAL).
    interval(interval: Duration), get_interval: Duration;
});

impl Default for MonitorOptions {
    fn default() -> Self {
        Self {
            interval: Self::DEFAULT_INTERVAL,
        }
    }
}

impl<S: OutboxStore> Monitor<S> {
    /// A monitor of one route, with [`MonitorOptions::default`].
    pub fn new(store: S, route: impl Into<String>) -> Self {
        let route = route.into();
        Self {
            store,
            labels: vec![Label::new("route", route.clone())],
            route,
            options: MonitorOptions::default(),
        }
    }

    /// Sets the options.
    pub fn options(mut self, options: MonitorOptions) -> Self {
        self.options = options;
        self
    }

    /// The options.
    pub fn get_options(&self) -> &MonitorOptions {
        &self.options
    }

    /// Labels the gauges with `tenant` too.
    pub fn tenant(mut self, tenant: &Tenant) -> Self {
        self.labels.truncate(1);
        self.labels
            .push(Label::new("tenant", tenant.id().to_owned()));
        self
    }

    /// Reads the route's stats once and sets the gauges.
    ///
    /// # Errors
    ///
    /// [`StoreError::Unavailable`](crate::StoreError::Unavailable) or
    /// [`StoreError::Timeout`](crate::StoreError::Timeout) when the database
    /// cannot be reached in time; [`StoreError::Schema`](crate::StoreError::Schema)
    /// when the outbox table is missing; [`StoreError::Backend`](crate::StoreError::Backend)
    /// for any other database error. The gauges keep their last values.
    pub async fn observe(&self) -> Result<(), crate::StoreError> {
        let stats = self.store.stats(&self.route).await?;
        let labels = &self.labels;
        metrics::gauge!("tidings_outbox_pending", labels.iter()).set(stats.pending as f64);
        metrics::gauge!("tidings_outbox_in_flight", labels.iter()).set(stats.in_flight as f64);
        metrics::gauge!("tidings_outbox_failed", labels.iter()).set(stats.failed as f64);
        let age = stats.oldest_pending_age.unwrap_or_default().as_secs_f64();
        metrics::gauge!("tidings_outbox_oldest_pending_seconds", labels.iter()).set(age);
        Ok(())
    }
}

impl<S: OutboxStore> Step for Monitor<S> {
    fn run(&self, cancel: CancellationToken) -> BoxFuture<'_, Result<(), StepError>> {
        repeat("monitor", self.options.interval, cancel, || self.observe()).boxed()
    }
}
