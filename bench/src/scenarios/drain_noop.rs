//! drain-noop: a backlog relayed to a publisher that does nothing, with
//! locked claims (the default) and with leased claims, against a bare
//! claim-and-delete loop in plain SQL with the same batch size. The goal
//! is the default's; the leased figure shows what the other mode costs.

use tidings_postgres::{ClaimMode, Retention};

use crate::args::Sizes;
use crate::cpu::CpuTime;
use crate::env::{Env, spec};
use crate::load::stage_pending;
use crate::raw_drain;
use crate::report::{Figure, Goal};

use super::relay_to_nothing;

const NAME: &str = "drain-noop";

pub(super) async fn run(
    env: &Env,
    sizes: &Sizes,
    report: &mut dyn FnMut(Figure),
) -> anyhow::Result<()> {
    let raw = env.store("drain_raw", Retention::Delete).await?;
    let locked = env.store("drain", Retention::Delete).await?;
    let leased = env
        .store_claiming("drain_leased", Retention::Delete, ClaimMode::Leased)
        .await?;
    let result = async {
        let spec = spec("bench-drain");
        for store in [&raw, &leased, &locked] {
            env.stop_autovacuum(store).await?;
            stage_pending(store, spec, sizes.drain_events).await?;
            env.vacuum(store).await?;
        }
        let before = CpuTime::now();
        let (raw_moved, raw_took) = raw_drain::drain(&raw, spec, sizes.batch_size).await?;
        let raw_cpu = CpuTime::now() - before;
        let raw_rate = Figure::rate(NAME, "raw claim + delete loop", raw_moved, raw_took);
        report(raw_rate.clone());
        let before = CpuTime::now();
        let took = relay_to_nothing(&leased, spec, sizes, sizes.drain_events).await?;
        let leased_cpu = CpuTime::now() - before;
        report(
            Figure::rate(
                NAME,
                "relayed events, leased claims",
                sizes.drain_events,
                took,
            )
            .limit(raw_rate.value),
        );
        let before = CpuTime::now();
        let took = relay_to_nothing(&locked, spec, sizes, sizes.drain_events).await?;
        let locked_cpu = CpuTime::now() - before;
        report(
            Figure::rate(
                NAME,
                "relayed events, locked claims (default)",
                sizes.drain_events,
                took,
            )
            .limit(raw_rate.value)
            .goal(Goal::RatioAtLeast(0.6)),
        );
        let sides = [
            ("raw", raw_cpu, raw_moved),
            ("leased relay", leased_cpu, sizes.drain_events),
            ("locked relay", locked_cpu, sizes.drain_events),
        ];
        for (side, cpu, events) in sides {
            report(Figure::cpu_per_thousand(NAME, side, cpu, events));
        }
        Ok(())
    }
    .await;
    for store in [&raw, &leased, &locked] {
        env.drop_store(store).await?;
    }
    result
}
