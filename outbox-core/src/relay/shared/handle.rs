//! Adding and removing routes of a running shared relay.

use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use super::slots::Slots;
use crate::relay::Relay;
use crate::{OutboxStore, Publisher};

/// Adds routes to a [`SharedRelay`](super::SharedRelay), and removes them,
/// while it runs: a tenant signing up or leaving, a route deployed or
/// retired. Clones share the relay. A change takes effect at the relay's
/// next turn; a pass of a removed route that is running finishes first,
/// settling what it claimed.
///
/// ```
/// use tidings_core::OutboxSpec;
/// use tidings_core::memory::{MemoryBroker, MemoryStore};
/// use tidings_core::relay::{Relay, SharedRelay, Tenant};
///
/// static EVENTS: OutboxSpec<u64> = OutboxSpec::json("order-events").destination("orders");
///
/// # fn main() -> Result<(), tidings_core::SpecError> {
/// let relay: SharedRelay<MemoryStore, MemoryBroker> = SharedRelay::new();
/// let tenants = relay.handle();
/// // Later, while `relay` runs as a step:
/// let acme = MemoryStore::new();
/// tenants.add(Relay::new(acme, MemoryBroker::new(), &EVENTS)?.tenant(Tenant::new("acme")));
/// tenants.remove_tenant("acme");
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct SharedRelayHandle<S, P> {
    changes: Arc<Changes<S, P>>,
}

impl<S, P> Clone for SharedRelayHandle<S, P> {
    fn clone(&self) -> Self {
        Self {
            changes: self.changes.clone(),
        }
    }
}

impl<S, P> SharedRelayHandle<S, P> {
    pub(super) fn new(changes: Arc<Changes<S, P>>) -> Self {
        Self { changes }
    }

    /// Serves `relay`'s route too.
    pub fn add(&self, relay: Relay<S, P>) {
        self.changes.push(Change::Add(relay));
    }

    /// Stops serving every route of the tenant `id`.
    pub fn remove_tenant(&self, id: &str) {
        self.changes.push(Change::Remove {
            tenant: Some(id.to_owned()),
            route: None,
        });
    }

    /// Stops serving the route named `route`: of the tenant `tenant`, or
    /// of every tenant when `None`.
    pub fn remove_route(&self, route: &str, tenant: Option<&str>) {
        self.changes.push(Change::Remove {
            tenant: tenant.map(str::to_owned),
            route: Some(route.to_owned()),
        });
    }
}

/// One change asked for.
#[derive(Debug)]
enum Change<S, P> {
    Add(Relay<S, P>),
    Remove {
        tenant: Option<String>,
        route: Option<String>,
    },
}

/// The changes asked for and not yet made, and the signal that there are.
#[derive(Debug)]
pub(super) struct Changes<S, P> {
    pending: Mutex<Vec<Change<S, P>>>,
    signal: Notify,
}

impl<S, P> Default for Changes<S, P> {
    fn default() -> Self {
        Self {
            pending: Mutex::default(),
            signal: Notify::new(),
        }
    }
}

impl<S, P> Changes<S, P> {
    fn push(&self, change: Change<S, P>) {
        self.lock().push(change);
        self.signal.notify_one();
    }

    /// Waits until a change is asked for.
    pub(super) async fn changed(&self) {
        self.signal.notified().await;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Change<S, P>>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl<S: OutboxStore, P: Publisher> Changes<S, P> {
    /// Makes every change asked for so far, in order.
    pub(super) fn apply(&self, slots: &mut Slots<S, P>) {
        let changes = std::mem::take(&mut *self.lock());
        for change in changes {
            match change {
                Change::Add(relay) => slots.add(relay),
                Change::Remove { tenant, route } => {
                    slots.remove(tenant.as_deref(), route.as_deref());
                }
            }
        }
    }
}
