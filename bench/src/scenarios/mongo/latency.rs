//! mongo-latency: producers commit staged events at steady rates
//! (`--mongo-rates`, for the latency scenario's duration) while a relay woken by the store's watcher (a
//! change stream on the outbox) publishes them; measures commit-to-publish
//! p50 and p99 and counts staged against published. The publisher notes
//! when each event reaches it, so the figure is the relay's own delay.

use std::time::{Duration, Instant};

use futures::FutureExt;
use tidings_core::OutboxSpec;
use tidings_mongo::MongoOutboxStore;
use tokio::time::MissedTickBehavior;
use uuid::Uuid;

use crate::delays::quantile;
use crate::env::spec;
use crate::payload::Payload;
use crate::publishers::RecordingPublisher;
use crate::report::{Figure, Goal};
use crate::scenarios::woken::{Plan, WokenRelay, warm_up_by};
use crate::sizes::Sizes;

use super::services::{database, drop_store, store};

const NAME: &str = "mongo-latency";
/// How soon a warm-up event must be published to count the relay as ready.
const WARM_UP_WAIT: Duration = Duration::from_millis(100);
/// How long the relay gets to publish the last events after producing stops.
const SETTLE: Duration = Duration::from_secs(10);

pub(in crate::scenarios) async fn run(
    sizes: &Sizes,
    report: &mut dyn FnMut(Figure),
) -> anyhow::Result<()> {
    let database = database().await?;
    for &rate in &sizes.mongo_rates {
        let store = store(&database, "latency").await?;
        let result = measure(&store, rate, sizes).await;
        drop_store(&store).await?;
        for figure in result? {
            report(figure);
        }
    }
    Ok(())
}

async fn measure(
    store: &MongoOutboxStore,
    rate: u32,
    sizes: &Sizes,
) -> anyhow::Result<Vec<Figure>> {
    let spec = spec("bench-mongo-latency");
    let relay = WokenRelay::start(store, spec, sizes.batch_size, |wakeup, cancel| {
        store.wakeup_source(wakeup).spawn(cancel)
    })?;
    warm_up(store, spec, relay.publisher()).await?;
    let plan = Plan::new(rate);
    let duration = sizes.latency_duration;
    let run = relay
        .measure(plan, SETTLE, |p| {
            produce(store.clone(), spec, plan, duration, p)
        })
        .await?;
    let label = |what: &str| format!("{what} at {rate}/s");
    let committed_rate = format!(
        "committed rate at {rate}/s ({} producers, {} events per transaction)",
        plan.producers, plan.events_per_tx
    );
    Ok(vec![
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
    ])
}

/// Commits events until one is published within [`WARM_UP_WAIT`]: the
/// watcher is open and the relay idle. What was published is forgotten.
async fn warm_up(
    store: &MongoOutboxStore,
    spec: &'static OutboxSpec<Payload>,
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

/// Commits events at the plan's rate for `duration`; returns each event
/// id with when its commit returned.
async fn produce(
    store: MongoOutboxStore,
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
    while Instant::now() < end {
        ticks.tick().await;
        let ids = store
            .transaction(|ctx| {
                let mut ids = Vec::with_capacity(plan.events_per_tx as usize);
                for k in 0..plan.events_per_tx {
                    let payload = Payload::new(n + i64::from(k));
                    let staged = ctx.outbox().stage(spec, "order.placed", &payload);
                    ids.push(staged.map(|s| s.envelope().event_id));
                }
                async move { Ok(ids.into_iter().collect::<Result<Vec<_>, _>>()?) }.boxed()
            })
            .await?;
        n += i64::from(plan.events_per_tx);
        let now = Instant::now();
        committed.extend(ids.into_iter().map(|id| (id, now)));
    }
    Ok(committed)
}
