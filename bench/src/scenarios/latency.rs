//! latency: producers commit one staged event per transaction at a steady
//! rate while a relay publishes them; measures commit-to-publish time and
//! counts staged against published. Each rate runs twice: with the
//! producers on the relay's own store, whose commits wake it in process,
//! and with them on a second store instance, standing for another process,
//! whose commits reach the relay by LISTEN/NOTIFY.
//!
//! The publisher notes when each envelope reaches it, so the figure is the
//! relay's own delay (wake-up, claim, hand-over), not the broker's confirm.
//! The clock starts when `commit` returns to the producer; a publish seen
//! earlier than that counts as zero.

use std::collections::HashMap;
use std::future::Future;
use std::time::{Duration, Instant};

use futures::future::try_join_all;
use tidings_core::Wakeup;
use tidings_core::relay::{Relay, RelayOptions};
use tidings_postgres::{PgOutboxStore, Retention};
use tokio::time::MissedTickBehavior;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::env::{Env, spec};
use crate::payload::Payload;
use crate::publishers::RecordingPublisher;
use crate::report::{Figure, Goal};
use crate::sizes::Sizes;

const NAME: &str = "latency";
/// Producers committing concurrently at most.
const MAX_PRODUCERS: u32 = 4;
/// Transactions one producer commits per second at most; above
/// `MAX_PRODUCERS` times this, transactions carry several events, since a
/// shared 2-core machine commits only several hundred per second.
const MAX_TX_PER_PRODUCER: u32 = 100;
/// How soon a warm-up event must be published to count the relay as ready.
const WARM_UP_WAIT: Duration = Duration::from_millis(20);
/// How long the relay gets to publish the last events after producing stops.
const SETTLE: Duration = Duration::from_secs(10);

pub(super) async fn run(
    env: &Env,
    sizes: &Sizes,
    report: &mut dyn FnMut(Figure),
) -> anyhow::Result<()> {
    for &rate in &sizes.latency_rates {
        for wake in [Wake::InProcess, Wake::Notify] {
            let store = env.store("latency", Retention::Delete).await?;
            let result = measure(&store, rate, wake, sizes).await;
            env.drop_store(&store).await?;
            for figure in result? {
                report(figure);
            }
        }
    }
    Ok(())
}

/// How the producers' commits reach the relay.
#[derive(Debug, Clone, Copy)]
enum Wake {
    /// Producers share the relay's store, which wakes it at commit.
    InProcess,
    /// Producers use a store instance of their own, which sends `NOTIFY`.
    Notify,
}

impl Wake {
    fn label(self) -> &'static str {
        match self {
            Self::InProcess => "woken in process",
            Self::Notify => "woken by NOTIFY",
        }
    }
}

async fn measure(
    store: &PgOutboxStore,
    rate: u32,
    wake: Wake,
    sizes: &Sizes,
) -> anyhow::Result<Vec<Figure>> {
    let spec = spec("bench-latency");
    let publisher = RecordingPublisher::default();
    let wakeup = Wakeup::new();
    let relay = Relay::new(store.clone(), publisher.clone(), spec)?
        .options(RelayOptions::default().batch_size(sizes.batch_size))
        .wakeup(wakeup.clone());
    let cancel = CancellationToken::new();
    let listener = store.wakeup_source(wakeup).spawn(cancel.clone());
    let relay = tokio::spawn({
        let cancel = cancel.clone();
        async move { relay.run(cancel).await }
    });
    let producers = match wake {
        Wake::InProcess => store.clone(),
        Wake::Notify => PgOutboxStore::new(store.pool().clone(), store.options().clone())?,
    };
    warm_up(&producers, spec, &publisher).await?;

    let plan = Plan::new(rate);
    let started = Instant::now();
    let committed = try_join_all((0..plan.producers).map(|p| {
        let store = producers.clone();
        tokio::spawn(produce(store, spec, plan, sizes.latency_duration, p))
    }))
    .await?
    .into_iter()
    .collect::<anyhow::Result<Vec<_>>>()?;
    let produced_for = started.elapsed();
    let committed: HashMap<Uuid, Instant> = committed.into_iter().flatten().collect();

    let deadline = Instant::now() + SETTLE;
    while publisher.count() < committed.len() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cancel.cancel();
    relay.await??;
    listener.await?;
    Ok(figures(
        plan,
        wake,
        &committed,
        &publisher.take(),
        produced_for,
    ))
}

/// Commits events until one is published within [`WARM_UP_WAIT`]: the
/// listener is connected and the relay idle, waiting for wake-ups. Gives
/// up after [`SETTLE`]. What was published so far is forgotten.
pub(super) async fn warm_up(
    store: &PgOutboxStore,
    spec: &'static tidings_core::OutboxSpec<Payload>,
    publisher: &RecordingPublisher,
) -> anyhow::Result<()> {
    let stage_one = || async move {
        let mut ctx = store.begin().await?;
        ctx.outbox().stage(spec, "warm.up", &Payload::new(-1))?;
        ctx.commit().await?;
        Ok(())
    };
    warm_up_by(stage_one, publisher, WARM_UP_WAIT).await
}

/// Commits an event with `stage_one` until one is published within
/// `wait`, whatever the store; gives up after [`SETTLE`]. What was
/// published so far is forgotten.
pub(super) async fn warm_up_by<F, Fut>(
    mut stage_one: F,
    publisher: &RecordingPublisher,
    wait: Duration,
) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let deadline = Instant::now() + SETTLE;
    while Instant::now() < deadline {
        stage_one().await?;
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

/// How a rate is produced.
#[derive(Debug, Clone, Copy)]
pub(super) struct Plan {
    rate: u32,
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

/// Commits events at `rate` per second for `duration`; returns each event
/// id with when its commit returned.
pub(super) async fn produce(
    store: PgOutboxStore,
    spec: &'static tidings_core::OutboxSpec<Payload>,
    plan: Plan,
    duration: Duration,
    producer: u32,
) -> anyhow::Result<Vec<(Uuid, Instant)>> {
    let mut ticks = tokio::time::interval(plan.interval);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Burst);
    let end = Instant::now() + duration;
    let mut committed = Vec::new();
    let mut n = i64::from(producer) << 32;
    while Instant::now() < end {
        ticks.tick().await;
        let mut ctx = store.begin().await?;
        let mut ids = Vec::with_capacity(plan.events_per_tx as usize);
        for _ in 0..plan.events_per_tx {
            let staged = ctx.outbox().stage(spec, "order.placed", &Payload::new(n))?;
            ids.push(staged.envelope().event_id);
            n += 1;
        }
        ctx.commit().await?;
        let now = Instant::now();
        committed.extend(ids.into_iter().map(|id| (id, now)));
    }
    Ok(committed)
}

fn figures(
    plan: Plan,
    wake: Wake,
    committed: &HashMap<Uuid, Instant>,
    published: &[(Uuid, Instant)],
    produced_for: Duration,
) -> Vec<Figure> {
    let mut delays: Vec<Duration> = published
        .iter()
        .filter_map(|(id, at)| committed.get(id).map(|c| at.saturating_duration_since(*c)))
        .collect();
    delays.sort();
    let missing = committed.len().saturating_sub(delays.len());
    let at = |q: f64| {
        let i = ((delays.len() as f64 * q).ceil() as usize).saturating_sub(1);
        delays.get(i).copied().unwrap_or_default()
    };
    let rate = plan.rate;
    let label = |what: &str| format!("{what} at {rate}/s, {}", wake.label());
    let committed_rate = format!(
        "committed rate at {rate}/s, {} ({} producers, {} events per transaction)",
        wake.label(),
        plan.producers,
        plan.events_per_tx
    );
    let mut out = vec![
        Figure::rate(NAME, &committed_rate, committed.len(), produced_for),
        Figure::millis(NAME, &label("commit-to-publish p50"), at(0.5)),
        Figure::millis(NAME, &label("commit-to-publish p99"), at(0.99)),
        Figure::new(
            NAME,
            &label("committed but unpublished"),
            missing as f64,
            "",
        )
        .goal(Goal::Equal(0.0)),
    ];
    if rate <= 200 {
        out[1].goal = Goal::AtMost(2.0);
        out[2].goal = Goal::AtMost(10.0);
    } else if rate <= 2_000 {
        out[2].goal = Goal::AtMost(25.0);
    }
    out
}
