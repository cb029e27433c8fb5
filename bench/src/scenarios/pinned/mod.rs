//! pinned: a sustained run at a steady staging rate with a relay
//! publishing every commit, once healthy and once with a `REPEATABLE READ`
//! transaction held open from the start on another connection
//! (`snapshot`); then, the snapshot still held, a backlog drained to a
//! publisher that does nothing, on the same table. Gives the
//! commit-to-publish percentiles of the run, the drain's throughput and
//! the outbox's dead row versions at the end, the pinned run against the
//! healthy one.
//!
//! The goal is the project's for a store that a held snapshot does not
//! hurt: at least 0.8 of the healthy drain throughput and at most twice
//! its p99. A store that deletes published rows leaves each as a dead
//! version that no vacuum may remove while the snapshot lives, so this is
//! the measure for a storage design proof against such a horizon.
//!
//! Autovacuum runs as configured on the server in both runs. The latency
//! is measured as in the latency scenario: producers on the relay's own
//! store (woken in process), the publisher noting when each event reaches
//! it.

mod snapshot;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use futures::future::try_join_all;
use tidings_core::Wakeup;
use tidings_core::relay::{Relay, RelayOptions};
use tidings_postgres::{PgOutboxStore, Retention};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::args::Sizes;
use crate::delays::{commit_to_publish, quantile};
use crate::env::{Env, spec};
use crate::load::stage_pending;
use crate::publishers::RecordingPublisher;
use crate::report::{Figure, Goal};

use super::latency::{Plan, produce, warm_up};
use super::relay_to_nothing;
use snapshot::{Snapshot, dead_tuples};

const NAME: &str = "pinned";
/// How long the relay gets to publish the last events after producing stops.
const SETTLE: Duration = Duration::from_secs(30);

/// What one run measured.
struct Run {
    committed: usize,
    produced_for: Duration,
    unpublished: usize,
    p50: Duration,
    p99: Duration,
    backlog: usize,
    drain_took: Duration,
    dead_tuples: i64,
}

pub(super) async fn run(
    env: &Env,
    sizes: &Sizes,
    report: &mut dyn FnMut(Figure),
) -> anyhow::Result<()> {
    let healthy = run_once(env, sizes, false).await?;
    let pinned = run_once(env, sizes, true).await?;
    let rate = sizes.pinned_rate;
    let secs = sizes.pinned_duration.as_secs_f64();
    for (label, run) in [("healthy", &healthy), ("snapshot held", &pinned)] {
        let label = |what: &str| format!("{label}: {what}");
        let committed = format!("committed rate, {rate}/s for {secs:.0} s");
        report(Figure::rate(
            NAME,
            &label(&committed),
            run.committed,
            run.produced_for,
        ));
        report(
            Figure::new(
                NAME,
                &label("committed but unpublished"),
                run.unpublished as f64,
                "",
            )
            .goal(Goal::Equal(0.0)),
        );
        report(Figure::millis(
            NAME,
            &label("commit-to-publish p50"),
            run.p50,
        ));
    }
    let healthy_p99 = Figure::millis(NAME, "healthy: commit-to-publish p99", healthy.p99);
    report(healthy_p99.clone());
    report(
        Figure::millis(NAME, "snapshot held: commit-to-publish p99", pinned.p99)
            .limit(healthy_p99.value)
            .goal(Goal::RatioAtMost(2.0)),
    );
    let drain = |label: &str, run: &Run| {
        let measure = format!("{label}: drain of {} events afterwards", run.backlog);
        Figure::rate(NAME, &measure, run.backlog, run.drain_took)
    };
    let healthy_drain = drain("healthy", &healthy);
    report(healthy_drain.clone());
    report(
        drain("snapshot held", &pinned)
            .limit(healthy_drain.value)
            .goal(Goal::RatioAtLeast(0.8)),
    );
    for (label, run) in [("healthy", &healthy), ("snapshot held", &pinned)] {
        let measure = format!("{label}: dead row versions in the outbox at the end");
        report(Figure::new(NAME, &measure, run.dead_tuples as f64, ""));
    }
    Ok(())
}

/// One run on a fresh store, with a snapshot held throughout if `pin`.
async fn run_once(env: &Env, sizes: &Sizes, pin: bool) -> anyhow::Result<Run> {
    let store = env.store("pinned", Retention::Delete).await?;
    let result = async {
        let snapshot = match pin {
            true => Some(Snapshot::hold(&store).await?),
            false => None,
        };
        let measured = measure(&store, sizes).await;
        let dead = dead_tuples(&store).await;
        if let Some(snapshot) = snapshot {
            snapshot.release().await?;
        }
        let mut run = measured?;
        run.dead_tuples = dead?;
        Ok(run)
    }
    .await;
    env.drop_store(&store).await?;
    result
}

/// The steady run, then the drain of a backlog on a second route.
async fn measure(store: &PgOutboxStore, sizes: &Sizes) -> anyhow::Result<Run> {
    let spec = spec("bench-pinned");
    let publisher = RecordingPublisher::default();
    let wakeup = Wakeup::new();
    let relay = Relay::new(store.clone(), publisher.clone(), spec)?
        .options(RelayOptions::default().batch_size(sizes.batch_size))
        .wakeup(wakeup.clone());
    let cancel = CancellationToken::new();
    let listener = store.listener(wakeup).spawn(cancel.clone());
    let relay = tokio::spawn({
        let cancel = cancel.clone();
        async move { relay.run(cancel).await }
    });
    warm_up(store, spec, &publisher).await?;

    let plan = Plan::new(sizes.pinned_rate);
    let started = Instant::now();
    let committed = try_join_all((0..plan.producers).map(|p| {
        let store = store.clone();
        tokio::spawn(produce(store, spec, plan, sizes.pinned_duration, p))
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
    let delays = commit_to_publish(&committed, &publisher.take());

    let backlog = (sizes.drain_events / 5).max(10);
    let backlog_spec = crate::env::spec("bench-pinned-backlog");
    stage_pending(store, backlog_spec, backlog).await?;
    let drain_took = relay_to_nothing(store, backlog_spec, sizes, backlog).await?;
    Ok(Run {
        committed: committed.len(),
        produced_for,
        unpublished: committed.len().saturating_sub(delays.len()),
        p50: quantile(&delays, 0.5),
        p99: quantile(&delays, 0.99),
        backlog,
        drain_took,
        dead_tuples: 0,
    })
}
