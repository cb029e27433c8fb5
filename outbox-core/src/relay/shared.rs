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
//! gets one batch per turn and never starves a quiet one. A route is never
//! in two passes at once, which keeps a per-key route's order as a single
//! relay keeps it. A route whose pass found nothing sleeps until the
//! store's wake-up or its poll interval; one whose pass failed on a
//! transient error backs off on its own, leaving the others running.

use std::collections::VecDeque;
use std::time::Duration;

use futures::FutureExt;
use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{PassReport, Relay, SweepClock, sweeper};
use crate::lifecycle::{Step, StepError};
use crate::port::error_chain;
use crate::{OutboxStore, Publisher, StoreError, Wakeup};

/// Relays many routes of one store with a bounded number of passes at
/// once; see the [module docs](self). Each route keeps its own
/// [`RelayOptions`](super::RelayOptions) (batch size, window, lease, poll
/// interval, backoff, sweeps).
///
/// ```
/// use tidings_core::OutboxSpec;
/// use tidings_core::memory::{MemoryBroker, MemoryStore};
/// use tidings_core::relay::{Relay, SharedRelay};
///
/// static ORDER_EVENTS: OutboxSpec<u64> = OutboxSpec::json("order-events").to_queue("orders");
/// static INVOICE_EVENTS: OutboxSpec<u64> = OutboxSpec::json("invoice-events").to_queue("invoices");
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
#[derive(Debug, Clone)]
pub struct SharedRelay<S, P> {
    relays: Vec<Relay<S, P>>,
    passes: usize,
    wakeup: Option<Wakeup>,
}

impl<S, P> Default for SharedRelay<S, P> {
    fn default() -> Self {
        Self {
            relays: Vec::new(),
            passes: Self::DEFAULT_PASSES,
            wakeup: None,
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

    /// Serves `relay`'s route too, with its options. Its own wake-up, if
    /// any, is not used: the shared relay has one for all
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

    /// Wakes the routes that found nothing early on this signal.
    pub fn wakeup(mut self, wakeup: Wakeup) -> Self {
        self.wakeup = Some(wakeup);
        self
    }

    /// The relays of the routes served, in the order added.
    pub fn relays(&self) -> &[Relay<S, P>] {
        &self.relays
    }
}

impl<S: OutboxStore, P: Publisher> SharedRelay<S, P> {
    /// Runs passes, in turn and at most [`passes`](Self::passes) at once,
    /// until no route has more waiting; returns the sum.
    pub async fn drain(&self) -> Result<PassReport, StoreError> {
        let mut turns = Turns::new(self.relays.len());
        let mut running = FuturesUnordered::new();
        let mut total = PassReport::default();
        let mut error = None;
        loop {
            while running.len() < self.passes && error.is_none() {
                let Some(route) = turns.next_ready() else {
                    break;
                };
                running.push(self.turn(route, false));
            }
            let Some((route, pass)) = running.next().await else {
                return error.map_or(Ok(total), Err);
            };
            match pass {
                Ok((report, more)) => {
                    total.add(report);
                    if more {
                        turns.again(route);
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
    /// one ends the run with it, once the passes running have finished.
    /// Passes running when `cancel` fires are finished, never abandoned
    /// with their claims.
    pub async fn run(&self, cancel: CancellationToken) -> Result<(), StoreError> {
        let mut turns = Turns::new(self.relays.len());
        let mut sweeps: Vec<_> = (self.relays.iter())
            .map(|r| r.config.sweep_interval.map(SweepClock::new))
            .collect();
        let mut running = FuturesUnordered::new();
        let mut error = None;
        while !cancel.is_cancelled() && error.is_none() {
            while running.len() < self.passes {
                let Some(route) = turns.next_ready() else {
                    break;
                };
                let sweep = sweeps[route].as_mut().is_some_and(SweepClock::due);
                running.push(self.turn(route, sweep));
            }
            let woken = async {
                match &self.wakeup {
                    Some(w) => w.notified().await,
                    None => std::future::pending().await,
                }
            };
            let due = turns.next_due();
            tokio::select! {
                () = cancel.cancelled() => {}
                Some((route, pass)) = running.next() => {
                    error = self.after(&mut turns, route, pass).err();
                }
                () = woken => turns.wake_idle(),
                () = sleep_until(due) => turns.wake_due(Instant::now()),
            }
        }
        // Every pass started is finished, so no claim is left to expire.
        while let Some((route, pass)) = running.next().await {
            if let Err(e) = self.after(&mut turns, route, pass) {
                error.get_or_insert(e);
            }
        }
        error.map_or(Ok(()), Err)
    }

    /// Schedules `route`'s next turn after its pass; a permanent error is
    /// handed back.
    fn after(
        &self,
        turns: &mut Turns,
        route: usize,
        pass: Result<(PassReport, bool), StoreError>,
    ) -> Result<(), StoreError> {
        let relay = &self.relays[route];
        match pass {
            Ok((_, true)) => turns.again(route),
            Ok((_, false)) => turns.idle(route, relay.config.poll_interval),
            Err(e) if e.is_transient() => {
                let delay = turns.failed(route, &relay.config.error_backoff);
                let route = &relay.route().name;
                tracing::error!(outbox.route = %route, error = %error_chain(&e), retry_in = ?delay, "relay pass failed");
            }
            Err(e) => return Err(e),
        }
        Ok(())
    }

    /// One turn of `route`: its sweep when due, then one pass.
    async fn turn(
        &self,
        route: usize,
        sweep: bool,
    ) -> (usize, Result<(PassReport, bool), StoreError>) {
        let relay = &self.relays[route];
        if sweep {
            let (store, name) = (&relay.store, &relay.route().name);
            if let Err(e) = sweeper::sweep(store, name, sweeper::Sweeper::<S>::DEFAULT_LIMIT).await
            {
                tracing::error!(outbox.route = %name, error = %error_chain(&e), "relay sweep failed");
            }
        }
        (route, relay.pass().await)
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

/// Whose turn it is: the routes ready for a pass, in line, and when each
/// resting route is due again.
struct Turns {
    ready: VecDeque<usize>,
    /// Per route: `None` while ready or running, else when it is due and
    /// whether a wake-up brings it forward (a route that found nothing) or
    /// not (one backing off after an error).
    resting: Vec<Option<(Instant, bool)>>,
    /// Per route: a wake-up came while its pass ran, perhaps after its
    /// claim, so it goes again rather than resting if it found nothing.
    woken: Vec<bool>,
    failures: Vec<u32>,
}

impl Turns {
    /// Every route ready, in the order added.
    fn new(routes: usize) -> Self {
        Self {
            ready: (0..routes).collect(),
            resting: vec![None; routes],
            woken: vec![false; routes],
            failures: vec![0; routes],
        }
    }

    /// The route whose pass starts next.
    fn next_ready(&mut self) -> Option<usize> {
        let route = self.ready.pop_front()?;
        self.woken[route] = false;
        Some(route)
    }

    /// `route` may have more: back of the line.
    fn again(&mut self, route: usize) {
        self.failures[route] = 0;
        self.ready.push_back(route);
    }

    /// `route` found nothing: due again after `poll`, or at a wake-up.
    fn idle(&mut self, route: usize, poll: Duration) {
        if std::mem::take(&mut self.woken[route]) {
            return self.again(route);
        }
        self.failures[route] = 0;
        self.resting[route] = Some((Instant::now() + poll, true));
    }

    /// `route`'s pass failed: due again after its backoff, returned.
    fn failed(&mut self, route: usize, backoff: &crate::Backoff) -> Duration {
        self.failures[route] += 1;
        let delay = backoff.delay(self.failures[route]);
        self.resting[route] = Some((Instant::now() + delay, false));
        delay
    }

    /// The earliest moment a resting route is due.
    fn next_due(&self) -> Option<Instant> {
        self.resting.iter().flatten().map(|(at, _)| *at).min()
    }

    /// Routes due by `now` join the line.
    fn wake_due(&mut self, now: Instant) {
        self.wake_where(|(at, _)| at <= now);
    }

    /// Routes that found nothing join the line; those running go again
    /// if they find nothing.
    fn wake_idle(&mut self) {
        for (route, resting) in self.resting.iter().enumerate() {
            self.woken[route] |= resting.is_none();
        }
        self.wake_where(|(_, wakes)| wakes);
    }

    fn wake_where(&mut self, wakes: impl Fn((Instant, bool)) -> bool) {
        for (route, resting) in self.resting.iter_mut().enumerate() {
            if resting.is_some_and(&wakes) {
                *resting = None;
                self.ready.push_back(route);
            }
        }
    }
}

async fn sleep_until(due: Option<Instant>) {
    match due {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
