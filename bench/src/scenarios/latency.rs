//! latency: producers commit one staged event per transaction at a steady
//! rate while a relay publishes them; measures commit-to-publish time and
//! counts staged against published. Each rate runs twice: with the
//! producers on the relay's own store, whose commits wake it in process,
//! and with them on a second store instance, standing for another process,
//! whose commits reach the relay by LISTEN/NOTIFY.
//!
//! With `--wake wal` the scenario runs on the cluster with
//! `wal_level=logical` instead: the NOTIFY-woken relay beside a
//! log-tailing relay reading its slot (`latency_wal`).
//!
//! The publisher notes when each envelope reaches it, so the figure is the
//! relay's own delay (wake-up, claim, hand-over), not the broker's confirm.
//! The clock starts when `commit` returns to the producer; a publish seen
//! earlier than that counts as zero.

use std::time::Duration;

use tidings_postgres::{PgOutboxStore, Retention};

use super::woken::{Plan, Run, WokenRelay};
use crate::env::{Env, spec};
use crate::report::{Figure, Goal, Report};
use crate::sizes::Sizes;

pub(super) const NAME: &str = "latency";
/// How long the relay gets to publish the last events after producing stops.
pub(super) const SETTLE: Duration = Duration::from_secs(10);

pub(super) async fn run(env: &Env, sizes: &Sizes, report: Report<'_>) -> anyhow::Result<()> {
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
pub(super) enum Wake {
    /// Producers share the relay's store, which wakes it at commit.
    InProcess,
    /// Producers use a store instance of their own, which sends `NOTIFY`.
    Notify,
}

impl Wake {
    pub(super) fn label(self) -> &'static str {
        match self {
            Self::InProcess => "woken in process",
            Self::Notify => "woken by NOTIFY",
        }
    }
}

pub(super) async fn measure(
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
    let plan = Plan::new(rate);
    let duration = sizes.latency_duration;
    let run = relay
        .steady(&producers, spec, plan, duration, SETTLE)
        .await?;
    Ok(figures(plan, wake, &run))
}

fn figures(plan: Plan, wake: Wake, run: &Run) -> Vec<Figure> {
    let mut out = run.figures(NAME, plan, &format!(", {}", wake.label()));
    if plan.rate <= 200 {
        out[1].goal = Goal::AtMost(2.0);
        out[2].goal = Goal::AtMost(10.0);
    } else if plan.rate <= 2_000 {
        out[2].goal = Goal::AtMost(25.0);
    }
    out
}
