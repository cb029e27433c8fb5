//! growth: the drain-noop backlog relayed from a table that keeps its
//! published rows (a million by default), against the same backlog in an
//! empty table. Both stores keep published rows, so both drains write the
//! same way. The two tables are drained in alternating rounds, each
//! first in half of them.

use std::time::Duration;

use tidings_postgres::Retention;

use crate::env::{Env, spec};
use crate::load::{insert_published, stage_pending};
use crate::report::{Figure, Goal, Report};
use crate::sizes::Sizes;

use super::relay_to_nothing;

const NAME: &str = "growth";
/// Rounds each table is drained in, alternating, so that a change in the
/// machine's load falls on both.
const ROUNDS: usize = 6;

pub(super) async fn run(env: &Env, sizes: &Sizes, report: Report<'_>) -> anyhow::Result<()> {
    let empty = env.store("growth_empty", Retention::Keep).await?;
    let full = env.store("growth_full", Retention::Keep).await?;
    let result = async {
        let spec = spec("bench-growth");
        for store in [&empty, &full] {
            env.stop_autovacuum(store).await?;
        }
        insert_published(&full, spec, sizes.growth_retained).await?;
        env.vacuum(&full).await?;
        // The million rows' pages are written out before timing, not by a
        // checkpoint in the middle of it.
        env.checkpoint().await;
        let per_round = sizes.drain_events.div_ceil(ROUNDS);
        let mut took = [Duration::ZERO; 2];
        for round in 0..ROUNDS {
            for store in [&empty, &full] {
                stage_pending(store, spec, per_round).await?;
                env.vacuum(store).await?;
            }
            for side in [round % 2, 1 - round % 2] {
                let store = [&empty, &full][side];
                took[side] +=
                    relay_to_nothing(store, spec, per_round, sizes.relay_options()).await?;
            }
        }
        let [empty_took, full_took] = took;
        let total = per_round * ROUNDS;
        let empty_rate = Figure::rate(NAME, "relayed events, empty table", total, empty_took);
        report(empty_rate.clone());
        let label = format!(
            "relayed events, {} published rows kept",
            sizes.growth_retained
        );
        report(
            Figure::rate(NAME, &label, total, full_took)
                .limit(empty_rate.value)
                .goal(Goal::RatioAtLeast(0.9)),
        );
        Ok(())
    }
    .await;
    env.drop_store(&empty).await?;
    env.drop_store(&full).await?;
    result
}
