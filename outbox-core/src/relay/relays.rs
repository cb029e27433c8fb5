//! Every step that relays a store's routes, made in one call.

use std::sync::Arc;

use super::{Monitor, Relay, RelayOptions, SharedRelay, Tenant};
use crate::lifecycle::{IntoSteps, Step};
use crate::{OutboxSpec, OutboxStore, Publisher, SpecError, Wakeup};

/// The steps that relay a store's rows to a publisher: one [`Relay`] per
/// route (each sweeping its route's dead claims), or with
/// [`shared`](Self::shared) one [`SharedRelay`] for all the routes, one
/// backlog [`Monitor`] per route, and the store's wake-up source, so a
/// commit wakes the relays at once. Stores make one with their
/// `relays(publisher)`; add it to a plan with
/// [`LifecyclePlan::steps`](crate::lifecycle::LifecyclePlan::steps).
///
/// ```
/// use tidings_core::OutboxSpec;
/// use tidings_core::lifecycle::LifecyclePlan;
/// use tidings_core::memory::{MemoryBroker, MemoryStore};
///
/// static ORDER_EVENTS: OutboxSpec<u64> = OutboxSpec::json("order-events").destination("orders");
/// static INVOICE_EVENTS: OutboxSpec<u64> = OutboxSpec::json("invoice-events").destination("invoices");
///
/// # fn main() -> Result<(), tidings_core::SpecError> {
/// let store = MemoryStore::new();
/// let plan = LifecyclePlan::new().steps(
///     store
///         .relays(MemoryBroker::new())
///         .route(&ORDER_EVENTS)?
///         .route(&INVOICE_EVENTS)?,
/// );
/// assert_eq!(
///     plan.step_names(),
///     ["relay order-events", "monitor order-events", "relay invoice-events", "monitor invoice-events"]
/// );
/// # Ok(())
/// # }
/// ```
pub struct Relays<S, P> {
    store: S,
    publisher: P,
    config: RelayOptions,
    wakeup: Option<Wakeup>,
    source: Option<(String, Arc<dyn Step>)>,
    relays: Vec<Relay<S, P>>,
    monitors: bool,
    shared: Option<usize>,
    tenant: Option<Tenant>,
}

impl<S: OutboxStore, P: Publisher + Clone> Relays<S, P> {
    /// Relays of `store`'s routes to `publisher`, with no wake-up source:
    /// they poll.
    pub fn new(store: S, publisher: P) -> Self {
        Self {
            store,
            publisher,
            config: RelayOptions::default(),
            wakeup: None,
            source: None,
            relays: Vec::new(),
            monitors: true,
            shared: None,
            tenant: None,
        }
    }

    /// Wakes every relay on `wakeup`, which the step `source` (named
    /// `name`, a store's listener or watcher) signals; `None` for a store
    /// that signals it itself.
    pub fn wakeup(mut self, wakeup: Wakeup, source: Option<(&str, Arc<dyn Step>)>) -> Self {
        self.wakeup = Some(wakeup);
        self.source = source.map(|(name, step)| (name.to_owned(), step));
        self
    }

    /// The options of the routes added after this.
    pub fn options(mut self, options: RelayOptions) -> Self {
        self.config = options;
        self
    }

    /// Whether each route gets a backlog monitor (on by default).
    pub fn monitors(mut self, monitors: bool) -> Self {
        self.monitors = monitors;
        self
    }

    /// Relays every route with one [`SharedRelay`] running at most
    /// `passes` passes at once, rather than a [`Relay`] per route: for a
    /// store with many routes, whose connections should not grow with
    /// them. Its step is named `relay shared`.
    ///
    /// ```
    /// # use tidings_core::OutboxSpec;
    /// # use tidings_core::lifecycle::LifecyclePlan;
    /// # use tidings_core::memory::{MemoryBroker, MemoryStore};
    /// # static ORDER_EVENTS: OutboxSpec<u64> = OutboxSpec::json("order-events").destination("orders");
    /// # static INVOICE_EVENTS: OutboxSpec<u64> = OutboxSpec::json("invoice-events").destination("invoices");
    /// # fn main() -> Result<(), tidings_core::SpecError> {
    /// let store = MemoryStore::new();
    /// let relays = store
    ///     .relays(MemoryBroker::new())
    ///     .shared(4)
    ///     .route(&ORDER_EVENTS)?
    ///     .route(&INVOICE_EVENTS)?;
    /// assert_eq!(
    ///     LifecyclePlan::new().steps(relays).step_names(),
    ///     ["relay shared", "monitor order-events", "monitor invoice-events"]
    /// );
    /// # Ok(())
    /// # }
    /// ```
    pub fn shared(mut self, passes: usize) -> Self {
        self.shared = Some(passes);
        self
    }

    /// The tenant the store serves, for the routes added after this: it
    /// labels their relays' and monitors' metrics (see [`Relay::tenant`]).
    pub fn tenant(mut self, tenant: Tenant) -> Self {
        self.tenant = Some(tenant);
        self
    }

    /// Relays `spec`'s route too.
    ///
    /// # Errors
    ///
    /// The spec is unusable (no destination, an illegal name, an impossible
    /// retry policy).
    pub fn route<T, C>(mut self, spec: &OutboxSpec<T, C>) -> Result<Self, SpecError> {
        let mut relay =
            Relay::new(self.store.clone(), self.publisher.clone(), spec)?.options(self.config);
        if let Some(wakeup) = &self.wakeup {
            relay = relay.wakeup(wakeup.clone());
        }
        if let Some(tenant) = &self.tenant {
            relay = relay.tenant(tenant.clone());
        }
        self.relays.push(relay);
        Ok(self)
    }
}

impl<S: OutboxStore, P: Publisher + Clone> IntoSteps for Relays<S, P> {
    fn into_steps(self) -> Vec<(String, Arc<dyn Step>)> {
        let mut steps: Vec<(String, Arc<dyn Step>)> = self.source.into_iter().collect();
        let monitor = |relay: &Relay<S, P>| -> Option<(String, Arc<dyn Step>)> {
            let route = &relay.route().name;
            let mut monitor = Monitor::new(relay.store.clone(), route.to_string());
            if let Some(tenant) = relay.get_tenant() {
                monitor = monitor.tenant(tenant);
            }
            let step: Arc<dyn Step> = Arc::new(monitor);
            self.monitors.then(|| (format!("monitor {route}"), step))
        };
        let Some(passes) = self.shared else {
            for relay in self.relays {
                let monitor = monitor(&relay);
                steps.push((format!("relay {}", relay.route().name), Arc::new(relay)));
                steps.extend(monitor);
            }
            return steps;
        };
        let monitors: Vec<_> = self.relays.iter().filter_map(monitor).collect();
        let mut shared = SharedRelay::new().passes(passes);
        if let Some(wakeup) = self.wakeup {
            shared = shared.wakeup(wakeup);
        }
        let shared = self.relays.into_iter().fold(shared, SharedRelay::relay);
        steps.push(("relay shared".to_owned(), Arc::new(shared)));
        steps.extend(monitors);
        steps
    }
}
