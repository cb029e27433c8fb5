//! One relay for many routes: a scheduler that runs the passes of every
//! route it serves, at most a fixed number at once, taking the routes in
//! turn.
//!
//! A service with fifty event types would otherwise run fifty [`Relay`]s,
//! each polling on its own and, with a store that holds claimed rows in
//! open transactions, each holding its own connections. A [`SharedRelay`]
//! holds at most [`passes`](SharedRelay::passes) claims at once whatever
//! the number of routes, so the connections it needs are bounded by that
//! number alone.
//!
//! Fairness: a route whose pass came back full (more may wait) goes to the
//! back of the line, behind every route already waiting, so a busy route
//! gets one batch per turn and never starves a quiet one. Routes of
//! different [tenants](super::Tenant) (stores of a database-per-tenant
//! service) line up within their tenant, and the tenants take turns, so
//! each tenant gets its share whatever its number of routes (see
//! `turns`). A route is never in two passes at once, which keeps a per-key
//! route's order as a single relay keeps it. A route whose pass found
//! nothing sleeps until the wake-up or its poll interval; one whose pass
//! failed on a transient error backs off on its own, leaving the others
//! running. Routes and tenants are added and removed while it runs through
//! a [`SharedRelayHandle`].

mod handle;
mod slots;
mod turns;

use std::sync::Arc;

use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{PassReport, Relay};
use crate::lifecycle::{Step, StepError};
use crate::port::error_chain;
use crate::{OutboxStore, Publisher, StoreError, Wakeup};

pub use handle::SharedRelayHandle;

use handle::Changes;
use slots::Slots;

/// Relays many routes, of one store or of several, with a bounded number
/// of passes at once; see the [module docs](self). Each route keeps its
/// own [`RelayOptions`](super::RelayOptions) (batch size, window, lease,
/// poll interval, backoff, sweeps).
///
/// ```
/// use tidings_core::OutboxSpec;
/// use tidings_core::memory::{MemoryBroker, MemoryStore};
/// use tidings_core::relay::{Relay, SharedRelay};
///
/// static ORDER_EVENTS: OutboxSpec<u64> = OutboxSpec::json("order-events").destination("orders");
/// static INVOICE_EVENTS: OutboxSpec<u64> = OutboxSpec::json("invoice-events").destination("invoices");
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let (store, broker) = (MemoryStore::new(), MemoryBroker::new());
/// broker.declare_queue("orders");
/// broker.declare_queue("invoices");
/// let mut ctx = store.begin();
/// ctx.outbox().stage(&ORDER_EVENTS, "order.placed", &1)?;
/// ctx.outbox().stage(&INVOICE_EVENTS, "invoice.sent", &2)?;
/// ctx.commit()?;
///
/// let relay = SharedRelay::new()
///     .relay(Relay::new(store.clone(), broker.clone(), &ORDER_EVENTS)?)
///     .relay(Relay::new(store.clone(), broker.clone(), &INVOICE_EVENTS)?)
///     .passes(2);
/// assert_eq!(relay.drain().await?.published, 2);
/// assert_eq!((broker.depth("orders"), broker.depth("invoices")), (1, 1));
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct SharedRelay<S, P> {
    relays: Vec<Relay<S, P>>,
    passes: usize,
    wakeup: Option<Wakeup>,
    changes: Arc<Changes<S, P>>,
}

impl<S, P> Default for SharedRelay<S, P> {
    fn default() -> Self {
        Self {
            relays: Vec::new(),
            passes: Self::DEFAULT_PASSES,
            wakeup: None,
            changes: Arc::default(),
        }
    }
}

impl<S, P> SharedRelay<S, P> {
    /// Default [`passes`](Self::passes).
    pub const DEFAULT_PASSES: usize = 4;

    /// A relay serving no route yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Serves `relay`'s route too, with its options and its tenant. Its
    /// own wake-up, if any, is not used: the shared relay has one for all
    /// ([`wakeup`](Self::wakeup)).
    pub fn relay(mut self, relay: Relay<S, P>) -> Self {
        self.relays.push(relay);
        self
    }

    /// Runs at most this many passes at once (at least 1), each of one
    /// route; 4 by default. With a store that holds claimed rows in open
    /// transactions, each pass holds a connection for its batch.
    pub fn passes(mut self, passes: usize) -> Self {
        self.passes = passes.max(1);
        self
    }

    /// Wakes the routes that found nothing early on this signal. Several
    /// stores' signals can be merged into one by having each wake it.
    pub fn wakeup(mut self, wakeup: Wakeup) -> Self {
        self.wakeup = Some(wakeup);
        self
    }

    /// The relays of the routes it was built with, in the order added.
    pub fn relays(&self) -> &[Relay<S, P>] {
        &self.relays
    }

    /// A handle adding and removing routes while the relay runs.
    pub fn handle(&self) -> SharedRelayHandle<S, P> {
        SharedRelayHandle::new(self.changes.clone())
    }
}

/// What a turn of one route came back with: its index and its pass.
type Turn = (usize, Result<(PassReport, bool), StoreError>);

impl<S: OutboxStore, P: Publisher> SharedRelay<S, P> {
    /// Runs passes, in turn and at most [`passes`](Self::passes) at once,
    /// until no route has more waiting; returns the sum.
    ///
    /// # Errors
    ///
    /// The [`StoreError`] of the first pass that fails, once the passes running
    /// have finished; no new pass starts after it.
    pub async fn drain(&self) -> Result<PassReport, StoreError> {
        let mut slots = self.slots();
        let mut running = FuturesUnordered::new();
        let mut total = PassReport::default();
        let mut error = None;
        loop {
            while running.len() < self.passes && error.is_none() {
                let Some(turn) = slots.next_turn(false) else {
                    break;
                };
                running.push(turn);
            }
            let Some((route, pass)) = running.next().await else {
                return error.map_or(Ok(total), Err);
            };
            match pass {
                Ok((report, more)) => {
                    total.add(report);
                    if more {
                        slots.turns.again(route);
                    }
                }
                Err(e) => {
                    error.get_or_insert(e);
                }
            }
        }
    }

    /// Relays until `cancel` fires. A route's transient store errors are
    /// retried with its backoff while the other routes go on; a permanent
    /// one ends the run with it, once the passes running have finished,
    /// except on a route serving a [tenant](super::Tenant), which backs
    /// off and tries again so that one tenant's broken store does not
    /// stop the others. Passes running when `cancel` fires are finished,
    /// never abandoned with their claims.
    ///
    /// # Errors
    ///
    /// The first [`StoreError`] that is not recoverable (see
    /// [`StoreError::is_recoverable`]) on a route serving no tenant, such as
    /// [`StoreError::Schema`] when the outbox table is missing.
    pub async fn run(&self, cancel: CancellationToken) -> Result<(), StoreError> {
        let mut slots = self.slots();
        let mut running = FuturesUnordered::new();
        let mut error = None;
        while !cancel.is_cancelled() && error.is_none() {
            while running.len() < self.passes {
                let Some(turn) = slots.next_turn(true) else {
                    break;
                };
                running.push(turn);
            }
            let woken = async {
                match &self.wakeup {
                    Some(w) => w.notified().await,
                    None => std::future::pending().await,
                }
            };
            let due = slots.turns.next_due();
            tokio::select! {
                () = cancel.cancelled() => {}
                Some((route, pass)) = running.next() => {
                    error = slots.after(route, pass).err();
                }
                () = woken => slots.turns.wake_idle(),
                () = self.changes.changed() => self.changes.apply(&mut slots),
                () = sleep_until(due) => slots.turns.wake_due(Instant::now()),
            }
        }
        // Every pass started is finished, so no claim is left to expire.
        while let Some((route, pass)) = running.next().await {
            if let Err(e) = slots.after(route, pass) {
                error.get_or_insert(e);
            }
        }
        error.map_or(Ok(()), Err)
    }

    /// The routes it was built with, and those added since.
    fn slots(&self) -> Slots<S, P> {
        let mut slots = Slots::default();
        for relay in &self.relays {
            slots.add(relay.clone());
        }
        self.changes.apply(&mut slots);
        slots
    }
}

impl<S: OutboxStore, P: Publisher> Step for SharedRelay<S, P> {
    fn run(&self, cancel: CancellationToken) -> BoxFuture<'_, Result<(), StepError>> {
        async move {
            SharedRelay::run(self, cancel)
                .await
                .map_err(StepError::from)
        }
        .boxed()
    }
}

/// Logs a failed pass of `relay`'s route.
fn log_failure<S: OutboxStore, P: Publisher>(
    relay: &Relay<S, P>,
    error: &StoreError,
    retry_in: std::time::Duration,
) {
    let route = &relay.route().name;
    tracing::error!(outbox.route = %route, error = %error_chain(error), ?retry_in, "relay pass failed");
}

async fn sleep_until(due: Option<Instant>) {
    match due {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
