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

use std::time::{Duration, Instant};

use tidings_postgres::{PgOutboxStore, Retention};
use tokio::time::MissedTickBehavior;
use uuid::Uuid;

use super::woken::{Plan, Run, WokenRelay, warm_up_by};
use crate::delays::quantile;
use crate::env::{Env, spec};
use crate::payload::Payload;
use crate::publishers::RecordingPublisher;
use crate::report::{Figure, Goal};
use crate::sizes::Sizes;

const NAME: &str = "latency";
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
    let relay = WokenRelay::start(store, spec, sizes.batch_size, |wakeup, cancel| {
        store.wakeup_source(wakeup).spawn(cancel)
    })?;
    let producers = match wake {
        Wake::InProcess => store.clone(),
        Wake::Notify => PgOutboxStore::new(store.pool().clone(), store.options().clone())?,
    };
    warm_up(&producers, spec, relay.publisher()).await?;
    let plan = Plan::new(rate);
    let duration = sizes.latency_duration;
    let run = relay
        .measure(plan, SETTLE, |p| {
            produce(producers.clone(), spec, plan, duration, p)
        })
        .await?;
    Ok(figures(plan, wake, &run))
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

fn figures(plan: Plan, wake: Wake, run: &Run) -> Vec<Figure> {
    let rate = plan.rate;
    let label = |what: &str| format!("{what} at {rate}/s, {}", wake.label());
    let committed_rate = format!(
        "committed rate at {rate}/s, {} ({} producers, {} events per transaction)",
        wake.label(),
        plan.producers,
        plan.events_per_tx
    );
    let mut out = vec![
        Figure::rate(NAME, &committed_rate, run.committed, run.produced_for),
        Figure::millis(
            NAME,
            &label("commit-to-publish p50"),
            quantile(&run.delays, 0.5),
        ),
        Figure::millis(
            NAME,
            &label("commit-to-publish p99"),
            quantile(&run.delays, 0.99),
        ),
        Figure::new(
            NAME,
            &label("committed but unpublished"),
            run.unpublished() as f64,
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
