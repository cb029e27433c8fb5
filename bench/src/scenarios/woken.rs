//! The run the latency scenarios share, whatever the store: a relay woken
//! by the store's wake-up source publishes to a recording publisher while
//! producers commit at a planned rate, and the run ends once every
//! committed event is published or the settle time is up.

use std::collections::HashMap;
use std::future::Future;
use std::time::{Duration, Instant};

use futures::future::try_join_all;
use tidings_core::relay::{Relay, RelayOptions};
use tidings_core::{OutboxSpec, OutboxStore, StoreError, Wakeup};
use tokio::task::JoinHandle;
use tokio::time::MissedTickBehavior;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::delays::{commit_to_publish, quantile};
use crate::load::Staging;
use crate::payload::Payload;
use crate::publishers::RecordingPublisher;
use crate::report::{Figure, Goal};

/// Producers committing concurrently at most.
const MAX_PRODUCERS: u32 = 4;
/// Transactions one producer commits per second at most; above
/// `MAX_PRODUCERS` times this, transactions carry several events, since a
/// shared 2-core machine commits only several hundred per second.
const MAX_TX_PER_PRODUCER: u32 = 100;
/// How long a warm-up may take before the relay counts as broken.
const WARM_UP_LIMIT: Duration = Duration::from_secs(10);
/// How soon a warm-up event must be published, for
/// [`WokenRelay::steady`], to count the relay as ready.
const WARM_UP_WAIT: Duration = Duration::from_millis(20);

/// How a rate is produced.
#[derive(Debug, Clone, Copy)]
pub(super) struct Plan {
    pub(super) rate: u32,
    pub(super) producers: u32,
    pub(super) events_per_tx: u32,
    pub(super) interval: Duration,
}

impl Plan {
    pub(super) fn new(rate: u32) -> Self {
        let rate = rate.max(1);
        let events_per_tx = rate.div_ceil(MAX_PRODUCERS * MAX_TX_PER_PRODUCER);
        let producers = rate.div_ceil(events_per_tx * MAX_TX_PER_PRODUCER);
        let interval = f64::from(events_per_tx * producers) / f64::from(rate);
        Self {
            rate,
            producers,
            events_per_tx,
            interval: Duration::from_secs_f64(interval),
        }
    }
}

/// What one run measured.
#[derive(Debug)]
pub(super) struct Run {
    /// Events committed.
    pub(super) committed: usize,
    /// How long the producers took.
    pub(super) produced_for: Duration,
    /// The commit-to-publish delay of each published event, sorted.
    pub(super) delays: Vec<Duration>,
}

impl Run {
    /// Committed events never published.
    pub(super) fn unpublished(&self) -> usize {
        self.committed.saturating_sub(self.delays.len())
    }

    /// The run's figures for scenario `name`, each labelled with the rate
    /// and `condition` (`""`, or `", how"`).
    pub(super) fn figures(&self, name: &'static str, plan: Plan, condition: &str) -> Vec<Figure> {
        let at = format!("at {}/s{condition}", plan.rate);
        let label = |what: &str| format!("{what} {at}");
        let committed_rate = format!(
            "committed rate {at} ({} producers, {} events per transaction)",
            plan.producers, plan.events_per_tx
        );
        vec![
            Figure::rate(name, &committed_rate, self.committed, self.produced_for),
            Figure::millis(
                name,
                &label("commit-to-publish p50"),
                quantile(&self.delays, 0.5),
            ),
            Figure::millis(
                name,
                &label("commit-to-publish p99"),
                quantile(&self.delays, 0.99),
            ),
            Figure::new(
                name,
                &label("committed but unpublished"),
                self.unpublished() as f64,
                "",
            )
            .goal(Goal::Equal(0.0)),
        ]
    }
}

/// Commits the plan's events per transaction into `store` at the plan's
/// rate for `duration`, as producer number `producer`. Returns each event
/// id with when its commit returned.
pub(super) async fn produce(
    store: impl Staging,
    spec: &'static OutboxSpec<Payload>,
    plan: Plan,
    duration: Duration,
    producer: u32,
) -> anyhow::Result<Vec<(Uuid, Instant)>> {
    let mut ticks = tokio::time::interval(plan.interval);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Burst);
    let end = Instant::now() + duration;
    let mut committed = Vec::new();
    let mut n = i64::from(producer) << 32;
    let per_tx = plan.events_per_tx as usize;
    while Instant::now() < end {
        ticks.tick().await;
        let ids = store.commit_events(spec, n, per_tx).await?;
        n += per_tx as i64;
        let now = Instant::now();
        committed.extend(ids.into_iter().map(|id| (id, now)));
    }
    Ok(committed)
}

/// A relay of `spec` running on `store`, woken by the wake-up source that
/// `source` spawns.
pub(super) struct WokenRelay {
    publisher: RecordingPublisher,
    cancel: CancellationToken,
    relay: JoinHandle<Result<(), StoreError>>,
    source: JoinHandle<()>,
}

impl WokenRelay {
    pub(super) fn start<S>(
        store: &S,
        spec: &'static OutboxSpec<Payload>,
        batch_size: usize,
        source: impl FnOnce(Wakeup, CancellationToken) -> JoinHandle<()>,
    ) -> anyhow::Result<Self>
    where
        S: OutboxStore + Clone + 'static,
    {
        Self::start_with(store, spec, batch_size, Wakeup::new(), source)
    }

    /// A relay of `spec` running on `store`, woken by `wakeup`, which the
    /// store wakes itself (a log-tailing store's reader does, as it reads
    /// events), with no wake-up source beside it.
    pub(super) fn start_woken_by<S>(
        store: &S,
        spec: &'static OutboxSpec<Payload>,
        batch_size: usize,
        wakeup: Wakeup,
    ) -> anyhow::Result<Self>
    where
        S: OutboxStore + Clone + 'static,
    {
        Self::start_with(store, spec, batch_size, wakeup, |_, cancel| {
            tokio::spawn(async move { cancel.cancelled().await })
        })
    }

    fn start_with<S>(
        store: &S,
        spec: &'static OutboxSpec<Payload>,
        batch_size: usize,
        wakeup: Wakeup,
        source: impl FnOnce(Wakeup, CancellationToken) -> JoinHandle<()>,
    ) -> anyhow::Result<Self>
    where
        S: OutboxStore + Clone + 'static,
    {
        let publisher = RecordingPublisher::default();
        let relay = Relay::new(store.clone(), publisher.clone(), spec)?
            .options(RelayOptions::default().batch_size(batch_size))
            .wakeup(wakeup.clone());
        let cancel = CancellationToken::new();
        let source = source(wakeup, cancel.clone());
        let relay = tokio::spawn({
            let cancel = cancel.clone();
            async move { relay.run(cancel).await }
        });
        Ok(Self {
            publisher,
            cancel,
            relay,
            source,
        })
    }

    /// The publisher the relay publishes to.
    pub(super) fn publisher(&self) -> &RecordingPublisher {
        &self.publisher
    }

    /// Warms the relay up with commits on `producers`, then has
    /// `plan.producers` producers on it commit `spec`'s events at the
    /// plan's rate for `duration` while the relay publishes (see
    /// [`measure`](Self::measure)).
    pub(super) async fn steady(
        self,
        producers: &impl Staging,
        spec: &'static OutboxSpec<Payload>,
        plan: Plan,
        duration: Duration,
        settle: Duration,
    ) -> anyhow::Result<Run> {
        warm_up(producers, spec, self.publisher(), WARM_UP_WAIT).await?;
        self.measure(plan, settle, |p| {
            produce(producers.clone(), spec, plan, duration, p)
        })
        .await
    }

    /// Runs `plan.producers` producers, each `produce(n)` returning the
    /// events it committed and when; waits up to `settle` for the relay to
    /// publish them all, then stops it.
    pub(super) async fn measure<F, Fut>(
        self,
        plan: Plan,
        settle: Duration,
        produce: F,
    ) -> anyhow::Result<Run>
    where
        F: Fn(u32) -> Fut,
        Fut: Future<Output = anyhow::Result<Vec<(Uuid, Instant)>>> + Send + 'static,
    {
        let started = Instant::now();
        let committed = try_join_all((0..plan.producers).map(|p| tokio::spawn(produce(p))))
            .await?
            .into_iter()
            .collect::<anyhow::Result<Vec<_>>>()?;
        let produced_for = started.elapsed();
        let committed: HashMap<Uuid, Instant> = committed.into_iter().flatten().collect();
        let deadline = Instant::now() + settle;
        while self.publisher.count() < committed.len() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.cancel.cancel();
        self.relay.await??;
        self.source.await?;
        Ok(Run {
            committed: committed.len(),
            produced_for,
            delays: commit_to_publish(&committed, &self.publisher.take()),
        })
    }
}

/// Commits an event into `store` until one is published within `wait`:
/// the wake-up source is listening and the relay idle. Gives up after
/// [`WARM_UP_LIMIT`]. What was published so far is forgotten.
pub(super) async fn warm_up(
    store: &impl Staging,
    spec: &'static OutboxSpec<Payload>,
    publisher: &RecordingPublisher,
    wait: Duration,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + WARM_UP_LIMIT;
    while Instant::now() < deadline {
        store.commit_events(spec, -1, 1).await?;
        let committed = Instant::now();
        let before = publisher.count();
        while publisher.count() == before && committed.elapsed() < wait {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        if committed.elapsed() < wait {
            // Let the relay settle that pass and go idle.
            tokio::time::sleep(Duration::from_millis(50)).await;
            publisher.take();
            return Ok(());
        }
    }
    anyhow::bail!("the relay never published a warm-up event within {wait:?}")
}
