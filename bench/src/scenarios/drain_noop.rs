//! drain-noop: a backlog relayed to a publisher that does nothing, with
//! locked claims (the default) and with leased claims, the relay's other
//! options its defaults, against the best drain plain SQL can write (see
//! [`raw_drain`]): one prepared delete per batch on several connections,
//! swept over batch sizes and connections, the fastest setting being the
//! limit. The goal is the default's; the leased figure shows what the
//! other mode costs, and the one with four drains what the default's
//! order across batches costs: its claims run side by side, as the raw
//! drain's deletes do.

use tidings_core::relay::RelayOptions;
use tidings_postgres::{ClaimMode, Retention};

use super::relay_to_nothing;
use crate::cpu::CpuTime;
use crate::env::{Env, spec};
use crate::load::stage_pending;
use crate::raw_drain;
use crate::report::{Figure, Goal, Report};
use crate::sizes::Sizes;

const NAME: &str = "drain-noop";

/// Drains of the figure that gives up order across batches, as the raw
/// drain's connections do.
const PARALLEL_DRAINS: usize = 4;

/// The raw drain's settings swept: rows per statement, connections.
const SWEEP: [(usize, usize); 6] = [(100, 1), (500, 1), (500, 2), (500, 4), (1000, 2), (1000, 4)];

pub(super) async fn run(env: &Env, sizes: &Sizes, report: Report<'_>) -> anyhow::Result<()> {
    let raw = env.store("drain_raw", Retention::Delete).await?;
    let locked = env.store("drain", Retention::Delete).await?;
    let leased = env
        .store_claiming("drain_leased", Retention::Delete, ClaimMode::Leased)
        .await?;
    let parallel = env.store("drain_parallel", Retention::Delete).await?;
    let result = async {
        for store in [&raw, &leased, &locked, &parallel] {
            env.stop_autovacuum(store).await?;
        }
        let spec = spec("bench-drain");
        let events = sizes.drain_events;
        let mut best: Option<Figure> = None;
        let mut raw_cpu = (CpuTime::default(), 0);
        for (batch, connections) in SWEEP {
            stage_pending(&raw, spec, events).await?;
            env.vacuum(&raw).await?;
            let before = CpuTime::now();
            let (moved, took) = raw_drain::drain(&raw, spec, batch, connections).await?;
            raw_cpu.0 += CpuTime::now() - before;
            raw_cpu.1 += moved;
            anyhow::ensure!(
                moved == events,
                "the raw drain moved {moved} of {events} rows"
            );
            let measure = format!("raw deletes of {batch} rows on {connections} connections");
            let figure = Figure::rate(NAME, &measure, moved, took);
            report(figure.clone());
            if best.as_ref().is_none_or(|b| figure.value > b.value) {
                best = Some(figure);
            }
        }
        let best = best.expect("the sweep has settings");
        let limit = best.value;
        let measure = format!(
            "raw drain, best of the sweep ({})",
            best.measure.trim_start_matches("raw ")
        );
        report(Figure::new(NAME, &measure, limit, best.unit));
        let mut sides = vec![("raw (the whole sweep)", raw_cpu.0, raw_cpu.1)];
        let defaults = RelayOptions::default();
        let relays = [
            (
                &leased,
                "leased claims",
                "leased relay",
                defaults,
                Goal::None,
            ),
            (
                &locked,
                "locked claims (default)",
                "locked relay",
                defaults,
                Goal::RatioAtLeast(0.8),
            ),
            (
                &parallel,
                "locked claims, 4 drains (no order across batches)",
                "locked relay, 4 drains",
                defaults.drains(PARALLEL_DRAINS),
                Goal::None,
            ),
        ];
        for (store, claims, side, options, goal) in relays {
            stage_pending(store, spec, events).await?;
            env.vacuum(store).await?;
            let before = CpuTime::now();
            let took = relay_to_nothing(store, spec, events, options).await?;
            let cpu = CpuTime::now() - before;
            let measure = format!("relayed events, {claims}");
            report(
                Figure::rate(NAME, &measure, events, took)
                    .limit(limit)
                    .goal(goal),
            );
            sides.push((side, cpu, events));
        }
        for (side, cpu, events) in sides {
            report(Figure::cpu_per_thousand(NAME, side, cpu, events));
        }
        Ok(())
    }
    .await;
    for store in [&raw, &leased, &locked, &parallel] {
        env.drop_store(store).await?;
    }
    result
}
