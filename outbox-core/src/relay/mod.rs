//! The relay engine: moves staged rows from an [`OutboxStore`] to a
//! [`Publisher`], at least once, with retries, poison handling and fencing.
//!
//! Each pass claims a batch under a fresh lease, publishes it concurrently,
//! and settles every row in one call: published, rescheduled with backoff
//! (transient errors), or failed with the reason (poison, max attempts,
//! crash loops). A lost lease means another relay owns the rows now; the
//! relay moves on. A full batch (in per-key mode, any non-empty one) is
//! followed at once by the next, so a backlog drains without sleeping;
//! otherwise the relay sleeps until a [`Wakeup`] or the poll interval.
//!
//! On an unordered route a backlog drains pipelined: while one batch is
//! published, the next is claimed, and each batch is settled as soon as
//! the broker has answered for it, so the relay moves at the pace of the
//! slowest step rather than of all three in turn. While claims are wide the
//! next batch is published while the last awaits its answers, once the
//! publisher says the last one's messages are queued ahead of it
//! ([`Publisher::send`]; RabbitMQ says so once they are
//! written to their channels, other transports once they are answered).
//! Each claim of a drain goes on past the last batch's rows where the store
//! can start there ([`ClaimCursor`](crate::ClaimCursor)), rather than
//! walking again from the route's oldest row past the rows the drain
//! still holds; one claim in eight, and the one that ends a drain, starts
//! from the oldest row, so rows left behind (due again after a retry,
//! committed late) wait a few batches at most.
//! Several such drains may work a backlog at once
//! ([`drains`](RelayOptions::drains), one by default, so keyed messages
//! keep their order across batches). Per-key routes claim only after
//! settling, since a settle is what releases their keys.
//!
//! A batch reaches the publisher a [`publish_window`] at a time, each
//! window after the one before has been answered, so the window bounds the
//! messages awaiting the broker while the batch size sets how many rows a
//! claim and a settle handle. By default a relay claims 1,000 rows and
//! hands them to the publisher in one window, which a publisher with
//! several confirm channels spreads over them: measured against raw
//! publishing swept over windows of 100 to 2,000 and 1 to 4 channels,
//! windows of 100 reached about half of the broker's ceiling (see the
//! bench's drain-rabbitmq). A claim that dies unsettled counts a
//! crash against every row it held, so a relay claims a single window's
//! worth when it starts and after any claim holding a row that crashed
//! before: a row that keeps killing the relay takes at most a window's
//! worth of rows with it when it is failed as a crash loop (1,000 by
//! default; a smaller `publish_window` tightens that bound).
//!
//! [`publish_window`]: RelayOptions::publish_window
//!
//! A running relay also returns its own route's rows whose claims died
//! (expired leases, a dead relay's claims) to pending every
//! [`sweep_interval`](RelayOptions::sweep_interval), so a relay started
//! alone after a crash recovers everything; the [`Sweeper`] does the same
//! as a step of its own, for relays that turn this off. Finished rows are
//! removed by the [`Cleaner`] and the backlog reported by the [`Monitor`],
//! each a step of its own.
//!
//! Through the `metrics` facade the relay counts
//! `tidings_relay_published_total`, `tidings_relay_rescheduled_total`,
//! `tidings_relay_failed_total` and `tidings_relay_lease_lost_total`, and
//! records `tidings_relay_claim_seconds` and `tidings_relay_publish_seconds`,
//! all labelled with the route.
//!
//! ```
//! use tidings_core::memory::{MemoryBroker, MemoryStore};
//! use tidings_core::relay::Relay;
//! use tidings_core::OutboxSpec;
//!
//! static EVENTS: OutboxSpec<u64> = OutboxSpec::json("order-events").destination("orders");
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let store = MemoryStore::new();
//! let broker = MemoryBroker::new();
//! broker.declare_queue("orders");
//!
//! let mut ctx = store.begin();
//! ctx.outbox().stage(&EVENTS, "order.placed", &42)?;
//! ctx.commit()?;
//!
//! let relay = Relay::new(store.clone(), broker.clone(), &EVENTS)?.wakeup(store.wakeup());
//! let report = relay.drain().await?;
//! assert_eq!(report.published, 1);
//! assert_eq!(broker.depth("orders"), 1);
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

mod cleaner;
mod give_up;
mod lane;
mod monitor;
mod options;
mod pass;
mod pipeline;
mod relays;
mod shared;
mod sweeper;
mod width;

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

pub use cleaner::{Cleaner, CleanerOptions};
pub use lane::Tenant;
pub use monitor::{Monitor, MonitorOptions};
pub use options::RelayOptions;
pub use pass::PassReport;
pub use relays::Relays;
pub use shared::{SharedRelay, SharedRelayHandle};
pub use sweeper::{Sweeper, SweeperOptions};

use lane::Lane;
use width::ClaimWidth;

use crate::lifecycle::{Step, StepError};
use crate::port::error_chain;
use crate::{
    OrderingMode, OutboxSpec, OutboxStore, Publisher, Route, SpecError, StoreError, Wakeup,
};

/// Relays one outbox route from a store to a publisher.
#[derive(Debug, Clone)]
pub struct Relay<S, P> {
    store: S,
    publisher: P,
    lane: Arc<Lane>,
    config: RelayOptions,
    wakeup: Option<Wakeup>,
    width: Arc<ClaimWidth>,
}

impl<S: OutboxStore, P: Publisher> Relay<S, P> {
    /// A relay for `spec`'s route; fails when the spec is unusable (no
    /// destination, illegal names, an impossible retry policy).
    ///
    /// # Errors
    ///
    /// [`SpecError::NoDestination`] when the spec has no destination;
    /// [`SpecError::EmptyName`], [`SpecError::NameTooLong`] or
    /// [`SpecError::IllegalName`] when its name or destination is not a legal
    /// name; [`SpecError::InvalidRetry`] when its retry policy cannot work.
    pub fn new<T, C>(store: S, publisher: P, spec: &OutboxSpec<T, C>) -> Result<Self, SpecError> {
        Self::for_route(store, publisher, spec.route().clone())
    }

    /// A relay for an untyped route.
    ///
    /// # Errors
    ///
    /// [`SpecError::NoDestination`] when the route has no destination;
    /// [`SpecError::EmptyName`], [`SpecError::NameTooLong`] or
    /// [`SpecError::IllegalName`] when its name or destination is not a legal
    /// name; [`SpecError::InvalidRetry`] when its retry policy cannot work.
    pub fn for_route(store: S, publisher: P, route: Route) -> Result<Self, SpecError> {
        route.validate()?;
        Ok(Self {
            store,
            publisher,
            lane: Arc::new(Lane::new(route, None)),
            config: RelayOptions::default(),
            wakeup: None,
            width: Arc::default(),
        })
    }

    /// Sets the options; default [`RelayOptions::default`].
    pub fn options(mut self, options: RelayOptions) -> Self {
        self.config = options;
        self
    }

    /// The options.
    pub fn get_options(&self) -> &RelayOptions {
        &self.config
    }

    /// Wakes the relay early on this signal (a store's change feed).
    pub fn wakeup(mut self, wakeup: Wakeup) -> Self {
        self.wakeup = Some(wakeup);
        self
    }

    /// Serves `tenant`: its id labels the relay's metrics, a
    /// [`SharedRelay`] gives each tenant its fair share of turns, and with
    /// [`Tenant::stamped`] every envelope published carries it as its
    /// `tenant_id`.
    ///
    /// ```
    /// use tidings_core::OutboxSpec;
    /// use tidings_core::memory::{MemoryBroker, MemoryStore};
    /// use tidings_core::relay::{Relay, Tenant};
    ///
    /// static EVENTS: OutboxSpec<u64> = OutboxSpec::json("order-events").destination("orders");
    ///
    /// # fn main() -> Result<(), tidings_core::SpecError> {
    /// let acme = MemoryStore::new();
    /// let relay = Relay::new(acme, MemoryBroker::new(), &EVENTS)?
    ///     .tenant(Tenant::new("acme").stamped());
    /// assert_eq!(relay.get_tenant().map(Tenant::id), Some("acme"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn tenant(mut self, tenant: Tenant) -> Self {
        let mut lane = Lane::new(self.lane.route.clone(), Some(tenant));
        lane.give_up = self.lane.give_up.clone();
        self.lane = Arc::new(lane);
        self
    }

    /// The tenant served, if one was set.
    pub fn get_tenant(&self) -> Option<&Tenant> {
        self.lane.tenant.as_ref()
    }

    /// The route relayed.
    pub fn route(&self) -> &Route {
        &self.lane.route
    }

    /// Claims, publishes and settles one batch.
    ///
    /// # Errors
    ///
    /// The [`StoreError`] of the claim or the settlement (see
    /// [`OutboxStore::claim`] and
    /// [`ClaimedBatch::settle`](crate::port::ClaimedBatch::settle)). Publish
    /// failures are no error: they are settled as retries or failures.
    pub async fn run_pass(&self) -> Result<PassReport, StoreError> {
        Ok(self.pass().await?.0)
    }

    /// One pass, and whether more may wait right after it: after a full
    /// batch, or in per-key mode after any claim, since keys it released
    /// may hold more rows.
    async fn pass(&self) -> Result<(PassReport, bool), StoreError> {
        let (store, publisher) = (&self.store, &self.publisher);
        let (report, limit) =
            pass::run_pass(store, publisher, &self.lane, &self.config, &self.width).await?;
        let per_key = self.lane.route.ordering == OrderingMode::PerKey;
        let more = report.claimed >= limit || (per_key && report.claimed > 0);
        Ok((report, more))
    }

    /// Runs passes until nothing more may wait (a short batch; on a per-key
    /// route, an empty one); returns the sum. On an unordered route the
    /// passes overlap (see the module docs).
    ///
    /// # Errors
    ///
    /// The [`StoreError`] of the first claim or settlement that fails (see
    /// [`run_pass`](Self::run_pass)); passes already done stay done.
    pub async fn drain(&self) -> Result<PassReport, StoreError> {
        if self.pipelines() {
            return pipeline::drain_parallel(
                &self.store,
                &self.publisher,
                &self.lane,
                &self.config,
                &self.width,
            )
            .await;
        }
        let mut total = PassReport::default();
        loop {
            let (report, more) = self.pass().await?;
            total.add(report);
            if !more {
                return Ok(total);
            }
        }
    }

    /// Relays until `cancel` fires. Transient store errors are retried with
    /// backoff, as is a claim that met a row it could not read (the store
    /// fails that row in place, so the next claim goes past it); a
    /// permanent error (a missing table) ends the run with it.
    ///
    /// # Errors
    ///
    /// The first [`StoreError`] that is not recoverable (see
    /// [`StoreError::is_recoverable`]), such as [`StoreError::Schema`] when
    /// the outbox table is missing.
    pub async fn run(&self, cancel: CancellationToken) -> Result<(), StoreError> {
        let mut failures = 0;
        let mut sweeps = self.config.sweep_interval.map(SweepClock::new);
        while !cancel.is_cancelled() {
            if let Some(clock) = sweeps.as_mut() {
                self.sweep_when_due(clock).await;
            }
            let pass = if self.pipelines() {
                // Drains until a claim comes back short: nothing waits.
                self.drain().await.map(|_| false)
            } else {
                self.pass().await.map(|(_, more)| more)
            };
            match pass {
                Ok(true) => {
                    failures = 0;
                    continue;
                }
                Ok(false) => failures = 0,
                Err(e) if e.is_recoverable() => {
                    failures += 1;
                    let delay = self.config.error_backoff.delay(failures);
                    tracing::error!(outbox.route = %self.lane.route.name, error = %error_chain(&e), retry_in = ?delay, "relay pass failed");
                    sleep_or_cancel(delay, &cancel).await;
                    continue;
                }
                Err(e) => return Err(e),
            }
            self.idle(&cancel).await;
        }
        Ok(())
    }

    /// Returns the route's rows whose claims died, when a sweep is due. A
    /// failed sweep is logged and tried again an interval later; the pass
    /// after it meets the same store and backs off if it is down.
    async fn sweep_when_due(&self, clock: &mut SweepClock) {
        if !clock.due() {
            return;
        }
        let limit = SweeperOptions::DEFAULT_LIMIT;
        if let Err(e) = sweeper::sweep(&self.store, &self.lane.route.name, limit).await {
            tracing::error!(outbox.route = %self.lane.route.name, error = %error_chain(&e), "relay sweep failed");
        }
    }

    /// Whether backlogs drain pipelined: on unordered routes.
    fn pipelines(&self) -> bool {
        self.lane.route.ordering == OrderingMode::Unordered
    }

    async fn idle(&self, cancel: &CancellationToken) {
        let woken = async {
            match &self.wakeup {
                Some(w) => w.notified().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = cancel.cancelled() => {}
            () = woken => {}
            () = tokio::time::sleep(self.config.poll_interval) => {}
        }
    }
}

impl<S: OutboxStore, P: Publisher> Step for Relay<S, P> {
    fn run(&self, cancel: CancellationToken) -> BoxFuture<'_, Result<(), StepError>> {
        async move { Relay::run(self, cancel).await.map_err(StepError::from) }.boxed()
    }
}

/// When the relay's next sweep is due: at once when it starts, so a
/// relay started after a crash recovers the dead one's rows first.
struct SweepClock {
    interval: std::time::Duration,
    next: tokio::time::Instant,
}

impl SweepClock {
    fn new(interval: std::time::Duration) -> Self {
        let next = tokio::time::Instant::now();
        Self { interval, next }
    }

    /// Whether a sweep is due; if so, the next one is an interval away.
    fn due(&mut self) -> bool {
        let now = tokio::time::Instant::now();
        let due = now >= self.next;
        if due {
            self.next = now + self.interval;
        }
        due
    }
}

async fn sleep_or_cancel(delay: std::time::Duration, cancel: &CancellationToken) {
    tokio::select! {
        () = cancel.cancelled() => {}
        () = tokio::time::sleep(delay) => {}
    }
}
