//! pinned-wal: the pinned scenario in message mode, on the cluster with
//! `wal_level=logical`: a sustained run at the pinned rate with a
//! log-tailing relay publishing every commit, once healthy and once with
//! a `REPEATABLE READ` transaction held open from the start; then, the
//! snapshot still held, a backlog on a second route relayed from the slot
//! to a publisher that does nothing. Gives the commit-to-publish
//! percentiles, the backlog's throughput against the healthy run's, and
//! the dead row versions at the end in the outbox table, which message
//! mode writes nothing to but the events that fail for good, and in the
//! table of the reader's recorded positions.
//!
//! The backlog is read by a new reader session, as after a relay's
//! restart: a session decodes the log from the slot's restart position,
//! which cannot pass the oldest transaction still running, so with the
//! snapshot held it decodes again everything since the snapshot began;
//! the log the slot retains at the end is reported with it.
//!
//! The snapshot is taken after the store's slot exists: a slot being
//! created waits for every transaction running to end.

use std::time::Duration;

use tidings_postgres::wal::WalStore;
use tidings_postgres::{PgOutboxStore, TailMode};
use tidings_testing::services::logical_database_url;

use super::snapshot::{Snapshot, dead_tuples, dead_tuples_in};
use crate::env::{Env, spec};
use crate::load::stage_pending;
use crate::report::{Figure, Goal, Report};
use crate::scenarios::woken::{Plan, Run, WokenRelay};
use crate::sizes::Sizes;
use crate::tailing::{
    drop_tailing, reading, relay_from_slot, stop_reading, tailing_store, wal_options,
};

const NAME: &str = "pinned-wal";
/// How long the relay gets to publish the last events after producing stops.
const SETTLE: Duration = Duration::from_secs(30);
/// Pool connections on the logical cluster: the producers, the relay's
/// position records and slot checks, staging.
const CONNECTIONS: u32 = 8;

/// What one run measured.
struct WalRun {
    steady: Run,
    backlog: usize,
    drain_took: Duration,
    outbox_dead: i64,
    positions_dead: i64,
    /// The log the slot kept from removal at the end, in bytes.
    retained: u64,
}

pub(in crate::scenarios) async fn run(
    env: &Env,
    sizes: &Sizes,
    report: Report<'_>,
) -> anyhow::Result<()> {
    let (healthy, pinned) = env
        .on_logical(CONNECTIONS, async |logical| {
            let healthy = run_once(logical, sizes, false).await?;
            let pinned = run_once(logical, sizes, true).await?;
            Ok((healthy, pinned))
        })
        .await?;
    let plan = Plan::new(sizes.pinned_rate);
    let sides = [("healthy", &healthy), ("snapshot held", &pinned)];
    let mut healthy_drain = 0.0;
    for (label, run) in sides {
        let mut figures = run.steady.figures(NAME, plan, &format!(", {label}"));
        if label == "snapshot held" {
            let healthy_p99 = healthy.steady.figures(NAME, plan, "")[2].value;
            figures[2] = figures[2].clone().limit(healthy_p99);
        }
        figures.into_iter().for_each(&mut *report);
        let measure = format!("{label}: drain of {} events afterwards", run.backlog);
        let drain = Figure::rate(NAME, &measure, run.backlog, run.drain_took);
        report(match label == "healthy" {
            true => {
                healthy_drain = drain.value;
                drain
            }
            false => drain.limit(healthy_drain).goal(Goal::RatioAtLeast(0.9)),
        });
        let measure = format!("{label}: dead row versions in the outbox at the end");
        report(Figure::new(NAME, &measure, run.outbox_dead as f64, "").goal(Goal::Equal(0.0)));
        let measure = format!("{label}: dead row versions in the positions table at the end");
        report(Figure::new(NAME, &measure, run.positions_dead as f64, ""));
        let measure = format!("{label}: log the slot retains at the end");
        report(Figure::new(NAME, &measure, run.retained as f64 / 1e6, "MB"));
    }
    Ok(())
}

/// One run on a fresh message-mode store, with a snapshot held throughout
/// if `pin`.
async fn run_once(env: &Env, sizes: &Sizes, pin: bool) -> anyhow::Result<WalRun> {
    let store = tailing_store(env, "pinned_wal", TailMode::Messages).await?;
    let result = async {
        let measured = async {
            let measured = measure(&store, sizes).await;
            let outbox_dead = dead_tuples(&store).await;
            let positions = format!("{}_positions", store.options().get_table());
            let positions_dead = dead_tuples_in(&store, &positions).await;
            (
                measured,
                outbox_dead,
                positions_dead,
                store.slot_state().await,
            )
        };
        let url = logical_database_url();
        let (measured, outbox_dead, positions_dead, slot) =
            Snapshot::held_if(pin, &url, measured).await?;
        let mut run = measured?;
        run.outbox_dead = outbox_dead?;
        run.positions_dead = positions_dead?;
        run.retained = slot?.map_or(0, |s| s.retained_bytes());
        Ok(run)
    }
    .await;
    drop_tailing(env, &store).await?;
    result
}

/// The steady run, then the backlog of a second route relayed from the
/// slot by a reader of its own (serving both routes, so that events of the
/// first it reads again are left alone, not failed).
async fn measure(store: &PgOutboxStore, sizes: &Sizes) -> anyhow::Result<WalRun> {
    let steady_spec = spec("bench-pinned");
    let backlog_spec = spec("bench-pinned-backlog");
    let options = wal_options(steady_spec)?.route(backlog_spec);
    let wal = WalStore::start(store.clone(), options.clone())?;
    reading(&wal).await?;
    let relay = WokenRelay::start_woken_by(&wal, steady_spec, sizes.batch_size, wal.wakeup())?;
    let plan = Plan::new(sizes.pinned_rate);
    let duration = sizes.pinned_duration;
    let steady = relay
        .steady(store, steady_spec, plan, duration, SETTLE)
        .await?;
    stop_reading(store, wal).await?;

    let backlog = sizes.drain_events.max(10);
    stage_pending(store, backlog_spec, backlog).await?;
    let (drain_took, _) =
        relay_from_slot(store, backlog_spec, options, sizes.relay_options(), backlog).await?;
    Ok(WalRun {
        steady,
        backlog,
        drain_took,
        outbox_dead: 0,
        positions_dead: 0,
        retained: 0,
    })
}
