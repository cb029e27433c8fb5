//! drain-wal: a backlog staged into a log-tailing store while no relay
//! runs, then relayed from its replication slot to a publisher that does
//! nothing by a relay with the default options (claims of 1,000), in
//! message mode and in table mode, against the raw limit of reading the
//! same backlog from a second slot created beside the store's before
//! staging (see [`raw_wal`](crate::raw_wal)), read once before the relay
//! and once after, the faster read being the limit. The polling relay of
//! a plain store, with the same options, drains the same number of events
//! on the same cluster beside them, and each side's CPU per 1,000 events
//! (bench and PostgreSQL) is reported.
//!
//! The reader holds at most 50,000 events unfinished (its window) and
//! drops finished ones as it confirms the slot, every 200 ms by default;
//! a figure with a 20 ms confirm interval shows what that costs a backlog
//! longer than the window.
//!
//! A log-tailing relay claims what its reader has read so far, so the
//! relay runs until its publisher has counted the backlog, rather than
//! draining to its first short claim; its time includes connecting to the
//! slot, as the raw reader's does.

use std::time::Duration;

use tidings_core::relay::RelayOptions;
use tidings_postgres::{PgOutboxStore, Retention, TailMode};

use super::relay_to_nothing;
use crate::cpu::CpuTime;
use crate::env::{Env, spec};
use crate::load::stage_pending;
use crate::raw_wal::RawSlot;
use crate::report::{Figure, Goal, Report};
use crate::sizes::Sizes;
use crate::tailing::{drop_tailing, mode_label, relay_from_slot, tailing_store, wal_options};

const NAME: &str = "drain-wal";
/// Pool connections on the logical cluster: staging, the relay's settling,
/// its position records and slot checks.
const CONNECTIONS: u32 = 4;
/// The confirm interval of the figure that shows what the default's
/// (200 ms) costs a drain longer than the reader's window.
const QUICK_CONFIRM: Duration = Duration::from_millis(20);

pub(super) async fn run(env: &Env, sizes: &Sizes, report: Report<'_>) -> anyhow::Result<()> {
    env.on_logical(CONNECTIONS, async |logical| {
        measure(logical, sizes, report).await
    })
    .await
}

async fn measure(env: &Env, sizes: &Sizes, report: Report<'_>) -> anyhow::Result<()> {
    let events = sizes.wal_events;
    let mut cpu = Vec::new();
    for mode in [TailMode::Messages, TailMode::Table] {
        let store = tailing_store(env, "drain_wal", mode).await?;
        let raw = RawSlot::create(&env.pool, &store, mode).await;
        let result = match &raw {
            Ok(raw) => mode_figures(env, &store, raw, mode, sizes, report).await,
            Err(_) => Ok((0.0, Vec::new())),
        };
        if let Ok(raw) = &raw {
            raw.drop(&env.pool).await?;
        }
        drop_tailing(env, &store).await?;
        raw?;
        let (limit, spent) = result?;
        cpu.extend(spent);
        let took = quick_confirm(env, mode, sizes).await?;
        let measure = format!(
            "relayed events, {}, slot confirmed every {} ms",
            mode_label(mode),
            QUICK_CONFIRM.as_millis()
        );
        report(Figure::rate(NAME, &measure, events, took).limit(limit));
    }
    let store = env.store("wal_polling", Retention::Delete).await?;
    let result = polling(env, &store, sizes).await;
    env.drop_store(&store).await?;
    let (took, spent) = result?;
    report(Figure::rate(
        NAME,
        "relayed events, polling relay (plain store, same cluster)",
        events,
        took,
    ));
    cpu.push(("polling relay".to_owned(), spent, events));
    for (side, spent, events) in cpu {
        report(Figure::cpu_per_thousand(NAME, &side, spent, events));
    }
    Ok(())
}

/// Stages the backlog, then reads it raw from `raw`'s slot before and
/// after relaying it from the store's, so the two sides share the
/// server's caches alike; the faster raw read is the limit. Reports the
/// rates and returns each side's CPU time.
async fn mode_figures(
    env: &Env,
    store: &PgOutboxStore,
    raw: &RawSlot,
    mode: TailMode,
    sizes: &Sizes,
    report: Report<'_>,
) -> anyhow::Result<(f64, Vec<(String, CpuTime, usize)>)> {
    let (events, label) = (sizes.wal_events, mode_label(mode));
    let spec = spec("bench-drain-wal");
    stage_pending(store, spec, events).await?;
    env.checkpoint().await;
    let (first, mut raw_cpu) = raw.read(&env.pool, events).await?;
    let options = wal_options(spec)?;
    let (took, relay_cpu) =
        relay_from_slot(store, spec, options, RelayOptions::default(), events).await?;
    let (second, spent) = raw.read(&env.pool, events).await?;
    raw_cpu += spent;
    for (when, took) in [("before", first), ("after", second)] {
        let measure = format!("raw slot read {when} the relay, {label}");
        report(Figure::rate(NAME, &measure, events, took));
    }
    let limit = Figure::rate(NAME, "", events, first.min(second)).value;
    report(
        Figure::rate(NAME, &format!("relayed events, {label}"), events, took)
            .limit(limit)
            .goal(Goal::RatioAtLeast(0.85)),
    );
    let cpu = vec![
        (format!("raw slot reads, {label}"), raw_cpu, 2 * events),
        (format!("log-tailing relay, {label}"), relay_cpu, events),
    ];
    Ok((limit, cpu))
}

/// Relays the backlog in `mode` from a store of its own with the slot
/// confirmed every [`QUICK_CONFIRM`]: a reader whose window is full reads
/// on only once finished events leave it, which they do as it confirms.
async fn quick_confirm(env: &Env, mode: TailMode, sizes: &Sizes) -> anyhow::Result<Duration> {
    let store = tailing_store(env, "wal_quick", mode).await?;
    let result = async {
        let spec = spec("bench-drain-wal");
        stage_pending(&store, spec, sizes.wal_events).await?;
        env.checkpoint().await;
        let options = wal_options(spec)?.confirm_interval(QUICK_CONFIRM);
        let (took, _) = relay_from_slot(
            &store,
            spec,
            options,
            RelayOptions::default(),
            sizes.wal_events,
        )
        .await?;
        anyhow::Ok(took)
    }
    .await;
    drop_tailing(env, &store).await?;
    result
}

/// Stages the backlog into a plain store and drains it with the polling
/// relay; returns how long the drain took and its CPU time.
async fn polling(
    env: &Env,
    store: &PgOutboxStore,
    sizes: &Sizes,
) -> anyhow::Result<(Duration, CpuTime)> {
    env.stop_autovacuum(store).await?;
    let spec = spec("bench-drain-wal");
    stage_pending(store, spec, sizes.wal_events).await?;
    env.vacuum(store).await?;
    env.checkpoint().await;
    let before = CpuTime::now();
    let took = relay_to_nothing(store, spec, sizes.wal_events, RelayOptions::default()).await?;
    Ok((took, CpuTime::now() - before))
}
