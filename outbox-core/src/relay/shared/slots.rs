//! The routes a running shared relay serves, by index: each route's relay
//! and sweep clock, and the turns between them.

use std::sync::Arc;

use futures::future::BoxFuture;

use super::turns::Turns;
use super::{Turn, log_failure};
use crate::relay::{PassReport, Relay, SweepClock, sweeper};
use crate::{OutboxStore, Publisher, StoreError};

/// Per route index: its relay (`None` once removed) and its sweep clock.
pub(super) struct Slots<S, P> {
    relays: Vec<Option<Arc<Relay<S, P>>>>,
    sweeps: Vec<Option<SweepClock>>,
    pub(super) turns: Turns,
}

impl<S, P> Default for Slots<S, P> {
    fn default() -> Self {
        Self {
            relays: Vec::new(),
            sweeps: Vec::new(),
            turns: Turns::default(),
        }
    }
}

impl<S: OutboxStore, P: Publisher> Slots<S, P> {
    /// Serves `relay`'s route from now on, ready for a pass.
    pub(super) fn add(&mut self, relay: Relay<S, P>) {
        let route = self.relays.len();
        let tenant = relay.get_tenant().map(|t| t.id.clone());
        self.sweeps
            .push(relay.config.sweep_interval.map(SweepClock::new));
        self.relays.push(Some(Arc::new(relay)));
        self.turns.add(route, tenant);
    }

    /// Stops serving the routes whose tenant and route name match, a
    /// `None` matching any; a pass of one still running ends as it would.
    pub(super) fn remove(&mut self, tenant: Option<&str>, route: Option<&str>) {
        for (index, slot) in self.relays.iter_mut().enumerate() {
            let Some(relay) = slot else { continue };
            let tenant_matches =
                tenant.is_none_or(|id| relay.get_tenant().is_some_and(|t| t.id() == id));
            let route_matches = route.is_none_or(|name| relay.route().name == name);
            if tenant_matches && route_matches {
                *slot = None;
                self.turns.remove(index);
            }
        }
    }

    /// The next route's turn, if one is ready: its sweep first when
    /// `sweeping` and one is due, then one pass.
    pub(super) fn next_turn(&mut self, sweeping: bool) -> Option<BoxFuture<'static, Turn>> {
        let route = self.turns.next_ready()?;
        let relay = self.relays[route].clone()?;
        let sweep = sweeping && self.sweeps[route].as_mut().is_some_and(SweepClock::due);
        Some(Box::pin(async move {
            if sweep {
                let (store, name) = (&relay.store, &relay.route().name);
                let limit = sweeper::SweeperOptions::DEFAULT_LIMIT;
                if let Err(e) = sweeper::sweep(store, name, limit).await {
                    tracing::error!(outbox.route = %name, error = %crate::port::error_chain(&e), "relay sweep failed");
                }
            }
            (route, relay.pass().await)
        }))
    }

    /// Schedules `route`'s next turn after its pass; a permanent error is
    /// handed back, unless the route serves a tenant: one tenant's broken
    /// store (a dropped table, a revoked grant) must not stop the others,
    /// so its route backs off and tries again like after a transient one.
    /// A route removed meanwhile has no next turn, whatever its pass gave.
    pub(super) fn after(
        &mut self,
        route: usize,
        pass: Result<(PassReport, bool), StoreError>,
    ) -> Result<(), StoreError> {
        let Some(relay) = self.relays[route].clone() else {
            if let Err(e) = pass {
                tracing::debug!(error = %crate::port::error_chain(&e), "a removed route's last pass failed");
            }
            return Ok(());
        };
        match pass {
            Ok((_, true)) => self.turns.again(route),
            Ok((_, false)) => self.turns.idle(route, relay.config.poll_interval),
            Err(e) if e.is_recoverable() || relay.get_tenant().is_some() => {
                let delay = self.turns.failed(route, &relay.config.error_backoff);
                log_failure(&relay, &e, delay);
            }
            Err(e) => return Err(e),
        }
        Ok(())
    }
}
