//! pinned: a sustained run at a steady staging rate with a relay
//! publishing every commit, once healthy and once with a `REPEATABLE READ`
//! transaction held open from the start on another connection
//! (`snapshot`); then, the snapshot still held, a backlog drained to a
//! publisher that does nothing, on the same table. Gives the
//! commit-to-publish percentiles of the run, the drain's throughput and
//! the outbox's dead row versions at the end. Both layouts run both ways,
//! each against the plain table on a healthy server.
//!
//! The goal is the project's for a store that a held snapshot does not
//! hurt, and it is the rotated layout's: at least 0.8 of the healthy drain
//! throughput and at most twice its p99. A store that deletes published
//! rows leaves each as a dead version that no vacuum may remove while the
//! snapshot lives; the plain table's claims step over all of them, the
//! rotated one's over the few seconds of them its slots hold.
//!
//! Autovacuum runs as configured on the server in both runs. The latency
//! is measured as in the latency scenario: producers on the relay's own
//! store (woken in process), the publisher noting when each event reaches
//! it.

mod snapshot;
pub(super) mod wal;

use std::time::Duration;

use tidings_postgres::{Layout, PgOutboxOptions, PgOutboxStore, Retention};
use tidings_testing::services::database_url;

use crate::delays::quantile;
use crate::env::{Env, spec};
use crate::load::stage_pending;
use crate::report::{Figure, Goal, Report};
use crate::sizes::Sizes;

use super::relay_to_nothing;
use super::woken::{Plan, WokenRelay};
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

pub(super) async fn run(env: &Env, sizes: &Sizes, report: Report<'_>) -> anyhow::Result<()> {
    let healthy = run_once(env, sizes, Layout::Plain, false).await?;
    let pinned = run_once(env, sizes, Layout::Plain, true).await?;
    let rotated_healthy = run_once(env, sizes, Layout::Rotated, false).await?;
    let rotated = run_once(env, sizes, Layout::Rotated, true).await?;
    let sides = [
        ("plain, healthy", &healthy),
        ("plain, snapshot held", &pinned),
        ("rotated, healthy", &rotated_healthy),
        ("rotated, snapshot held", &rotated),
    ];
    let rate = sizes.pinned_rate;
    let secs = sizes.pinned_duration.as_secs_f64();
    for (label, run) in sides {
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
    // Every side against the plain table on a healthy server; the goals
    // are the rotated layout's with the snapshot held.
    let measures = [
        (p99 as FigureOf, Goal::RatioAtMost(2.0)),
        (drain, Goal::RatioAtLeast(0.8)),
    ];
    for (figure, goal) in measures {
        let limit = figure("plain, healthy", &healthy);
        report(limit.clone());
        for (label, run) in &sides[1..] {
            let figure = figure(label, run).limit(limit.value);
            report(match *label == "rotated, snapshot held" {
                true => figure.goal(goal),
                false => figure,
            });
        }
    }
    for (label, run) in sides {
        let measure = format!("{label}: dead row versions in the outbox at the end");
        report(Figure::new(NAME, &measure, run.dead_tuples as f64, ""));
    }
    Ok(())
}

/// A side's figure of one measure, by its label and run.
type FigureOf = fn(&str, &Run) -> Figure;

/// A side's commit-to-publish p99.
fn p99(label: &str, run: &Run) -> Figure {
    Figure::millis(NAME, &format!("{label}: commit-to-publish p99"), run.p99)
}

/// A side's drain of its backlog afterwards.
fn drain(label: &str, run: &Run) -> Figure {
    let measure = format!("{label}: drain of {} events afterwards", run.backlog);
    Figure::rate(NAME, &measure, run.backlog, run.drain_took)
}

/// One run on a fresh store of `layout`, with a snapshot held throughout
/// if `pin`.
async fn run_once(env: &Env, sizes: &Sizes, layout: Layout, pin: bool) -> anyhow::Result<Run> {
    let options = PgOutboxOptions::new()
        .retention(Retention::Delete)
        .layout(layout);
    let store = env.store_with("pinned", options).await?;
    let result = async {
        let measured = async { (measure(&store, sizes).await, dead_tuples(&store).await) };
        let (measured, dead) = Snapshot::held_if(pin, &database_url(), measured).await?;
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
    let relay = WokenRelay::start(store, spec, sizes.batch_size, |wakeup, cancel| {
        store.wakeup_source(wakeup).spawn(cancel)
    })?;
    let plan = Plan::new(sizes.pinned_rate);
    let duration = sizes.pinned_duration;
    let steady = relay.steady(store, spec, plan, duration, SETTLE).await?;

    let backlog = (sizes.drain_events / 5).max(10);
    let backlog_spec = crate::env::spec("bench-pinned-backlog");
    stage_pending(store, backlog_spec, backlog).await?;
    let drain_took = relay_to_nothing(store, backlog_spec, backlog, sizes.relay_options()).await?;
    Ok(Run {
        committed: steady.committed,
        produced_for: steady.produced_for,
        unpublished: steady.unpublished(),
        p50: quantile(&steady.delays, 0.5),
        p99: quantile(&steady.delays, 0.99),
        backlog,
        drain_took,
        dead_tuples: 0,
    })
}
