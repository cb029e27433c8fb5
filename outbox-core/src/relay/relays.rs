//! Every step that relays a store's routes, made in one call.

use std::sync::Arc;

use super::{Monitor, Relay, RelayOptions, SharedRelay, Tenant};
use crate::give_up::GiveUpHook;
use crate::lifecycle::{IntoSteps, Step};
use crate::{OutboxSpec, OutboxStore, Publisher, Route, SpecError, Wakeup};

/// The steps that relay a store's rows to a publisher: one [`Relay`] per
/// route (each sweeping its route's dead claims), or with
/// [`shared`](Self::shared) one [`SharedRelay`] for all the routes, one
/// backlog [`Monitor`] per route, and the store's wake-up source, so a
/// commit wakes the relays at once. Stores make one with their
/// `relays(publisher)`; add it to a plan with
/// [`LifecyclePlan::steps`](crate::lifecycle::LifecyclePlan::steps).
///
/// The settings apply to the whole, whatever the order they are given in,
/// as the layers of an axum `Router`: [`options`](Self::options) sets the
/// options of every route not given its own with
/// [`route_with`](Self::route_with), whether it was added before or after.
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
    options: RelayOptions,
    wakeup: Option<Wakeup>,
    source: Option<(String, Arc<dyn Step>)>,
    relays: Vec<(Relay<S, P>, Option<RelayOptions>)>,
    monitors: bool,
    shared: Option<usize>,
    tenant: Option<Tenant>,
    /// Binds the give-up hook to each route (see [`give_up`](Self::give_up)).
    pub(super) give_up: Option<BindGiveUp>,
}

/// Binds one hook to each route it is given.
pub(super) type BindGiveUp = Arc<dyn Fn(&Route) -> GiveUpHook + Send + Sync>;

impl<S: OutboxStore, P: Publisher + Clone> Relays<S, P> {
    /// Relays of `store`'s routes to `publisher`, with no wake-up source:
    /// they poll.
    pub fn new(store: S, publisher: P) -> Self {
        Self {
            store,
            publisher,
            options: RelayOptions::default(),
            wakeup: None,
            source: None,
            relays: Vec::new(),
            monitors: true,
            shared: None,
            tenant: None,
            give_up: None,
        }
    }

    /// Relays of `store`'s routes to `publisher`, woken by the step
    /// `source` makes of their wake-up signal (a store's listener or
    /// watcher), which runs beside them as `wakeup source`.
    pub fn woken_by<W: Step + 'static>(
        store: S,
        publisher: P,
        source: impl FnOnce(Wakeup) -> W,
    ) -> Self {
        let wakeup = Wakeup::new();
        let step: Arc<dyn Step> = Arc::new(source(wakeup.clone()));
        Self::new(store, publisher).wakeup(wakeup, Some(("wakeup source", step)))
    }

    /// Wakes every relay on `wakeup`, which the step `source` (named
    /// `name`, a store's listener or watcher) signals; `None` for a store
    /// that signals it itself.
    pub fn wakeup(mut self, wakeup: Wakeup, source: Option<(&str, Arc<dyn Step>)>) -> Self {
        self.wakeup = Some(wakeup);
        self.source = source.map(|(name, step)| (name.to_owned(), step));
        self
    }

    /// The options of every route not given its own with
    /// [`route_with`](Self::route_with), those added before this as well
    /// as those added after; default [`RelayOptions::default`].
    pub fn options(mut self, options: RelayOptions) -> Self {
        self.options = options;
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

    /// The tenant the store serves: it labels every route's relay and
    /// monitor metrics (see [`Relay::tenant`]); none by default.
    pub fn tenant(mut self, tenant: Tenant) -> Self {
        self.tenant = Some(tenant);
        self
    }

    /// Relays `spec`'s route too, with the [`options`](Self::options)
    /// of the whole.
    ///
    /// # Errors
    ///
    /// The spec is unusable (no destination, an illegal name, an impossible
    /// retry policy).
    pub fn route<T, C>(self, spec: &OutboxSpec<T, C>) -> Result<Self, SpecError> {
        self.add(spec, None)
    }

    /// Relays `spec`'s route too, with `options` of its own, which
    /// [`options`](Self::options) leaves alone.
    ///
    /// ```
    /// # use tidings_core::OutboxSpec;
    /// # use tidings_core::memory::{MemoryBroker, MemoryStore};
    /// use tidings_core::relay::RelayOptions;
    /// # static ORDER_EVENTS: OutboxSpec<u64> = OutboxSpec::json("order-events").destination("orders");
    /// # static AUDIT_EVENTS: OutboxSpec<u64> = OutboxSpec::json("audit-events").destination("audit");
    /// # fn main() -> Result<(), tidings_core::SpecError> {
    /// let relays = MemoryStore::new()
    ///     .relays(MemoryBroker::new())
    ///     .route(&ORDER_EVENTS)?
    ///     .route_with(&AUDIT_EVENTS, RelayOptions::default().batch_size(50))?
    ///     .options(RelayOptions::default().batch_size(500))
    ///     .into_relays();
    /// let sizes: Vec<_> = relays.iter().map(|r| r.get_options().get_batch_size()).collect();
    /// assert_eq!(sizes, [500, 50]);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// The spec is unusable (no destination, an illegal name, an impossible
    /// retry policy).
    pub fn route_with<T, C>(
        self,
        spec: &OutboxSpec<T, C>,
        options: RelayOptions,
    ) -> Result<Self, SpecError> {
        self.add(spec, Some(options))
    }

    fn add<T, C>(
        mut self,
        spec: &OutboxSpec<T, C>,
        options: Option<RelayOptions>,
    ) -> Result<Self, SpecError> {
        let relay = Relay::new(self.store.clone(), self.publisher.clone(), spec)?;
        self.relays.push((relay, options));
        Ok(self)
    }

    /// The relays, one per route in the order they were added, each with
    /// its options, wake-up and tenant: what [`into_steps`](IntoSteps::into_steps)
    /// runs without [`shared`](Self::shared). The store's wake-up source
    /// and the monitors are left out; run them yourself, or use
    /// [`into_steps`](IntoSteps::into_steps).
    pub fn into_relays(self) -> Vec<Relay<S, P>> {
        let (options, wakeup, tenant) = (self.options, self.wakeup, self.tenant);
        let give_up = self.give_up;
        let finish = |(relay, own): (Relay<S, P>, Option<RelayOptions>)| {
            let mut relay = relay.options(own.unwrap_or(options));
            if let Some(bind) = &give_up {
                let hook = bind(relay.route());
                relay = relay.give_up_hook(hook);
            }
            if let Some(wakeup) = &wakeup {
                relay = relay.wakeup(wakeup.clone());
            }
            match &tenant {
                Some(tenant) => relay.tenant(tenant.clone()),
                None => relay,
            }
        };
        self.relays.into_iter().map(finish).collect()
    }
}

impl<S: OutboxStore, P: Publisher + Clone> IntoSteps for Relays<S, P> {
    fn into_steps(mut self) -> Vec<(String, Arc<dyn Step>)> {
        let mut steps: Vec<(String, Arc<dyn Step>)> = self.source.take().into_iter().collect();
        let (monitors, shared, wakeup) = (self.monitors, self.shared, self.wakeup.clone());
        let relays = self.into_relays();
        let monitor = |relay: &Relay<S, P>| -> Option<(String, Arc<dyn Step>)> {
            let route = &relay.route().name;
            let mut monitor = Monitor::new(relay.store.clone(), route.to_string());
            if let Some(tenant) = relay.get_tenant() {
                monitor = monitor.tenant(tenant);
            }
            let step: Arc<dyn Step> = Arc::new(monitor);
            monitors.then(|| (format!("monitor {route}"), step))
        };
        let Some(passes) = shared else {
            for relay in relays {
                let monitor = monitor(&relay);
                steps.push((format!("relay {}", relay.route().name), Arc::new(relay)));
                steps.extend(monitor);
            }
            return steps;
        };
        let monitors: Vec<_> = relays.iter().filter_map(monitor).collect();
        let mut shared = SharedRelay::new().passes(passes);
        if let Some(wakeup) = wakeup {
            shared = shared.wakeup(wakeup);
        }
        let shared = relays.into_iter().fold(shared, SharedRelay::relay);
        steps.push(("relay shared".to_owned(), Arc::new(shared)));
        steps.extend(monitors);
        steps
    }
}

#[cfg(test)]
mod tests {
    use crate::OutboxSpec;
    use crate::memory::{MemoryBroker, MemoryStore};
    use crate::relay::{Relay, RelayOptions, Tenant};

    static ORDERS: OutboxSpec<u64> = OutboxSpec::json("order-events").destination("orders");
    static AUDIT: OutboxSpec<u64> = OutboxSpec::json("audit-events").destination("audit");

    type Seen = Vec<(String, RelayOptions, Option<String>)>;

    fn seen(relays: Vec<Relay<MemoryStore, MemoryBroker>>) -> Seen {
        relays
            .iter()
            .map(|r| {
                let tenant = r.get_tenant().map(|t| t.id().to_owned());
                (r.route().name.to_string(), *r.get_options(), tenant)
            })
            .collect()
    }

    #[test]
    fn settings_apply_whatever_their_order() {
        let store = MemoryStore::new();
        let options = RelayOptions::default().batch_size(7);
        let own = RelayOptions::default().batch_size(3);
        let relays = || store.relays(MemoryBroker::new());
        let after = relays()
            .route(&ORDERS)
            .unwrap()
            .route_with(&AUDIT, own)
            .unwrap()
            .options(options)
            .tenant(Tenant::new("acme"));
        let before = relays()
            .tenant(Tenant::new("acme"))
            .options(options)
            .route(&ORDERS)
            .unwrap()
            .route_with(&AUDIT, own)
            .unwrap();
        let expected = vec![
            ("order-events".to_owned(), options, Some("acme".to_owned())),
            ("audit-events".to_owned(), own, Some("acme".to_owned())),
        ];
        assert_eq!(seen(after.into_relays()), expected);
        assert_eq!(seen(before.into_relays()), expected);
    }
}
