//! latency --wake wal: the latency scenario's steady rates on the cluster
//! with `wal_level=logical`, each run twice in the same run: by the
//! polling relay of a plain store woken by NOTIFY from producers on
//! another store instance, and by a log-tailing relay in message mode,
//! woken by its reader as it reads the producers' commits from the slot.
//! The log-tailing p99 is held to the NOTIFY-woken one's.

use tidings_postgres::{PgOutboxStore, Retention, TailMode};

use super::latency::{self, NAME, SETTLE, Wake};
use super::woken::{Plan, WokenRelay};
use crate::env::{Env, spec};
use crate::report::{Figure, Goal, Report};
use crate::sizes::Sizes;
use crate::tailing::{drop_tailing, reading, tailing_store, wal_store};

/// Pool connections on the logical cluster: the producers, the relay's
/// claims and settling, the listener and the reader's position records.
const CONNECTIONS: u32 = 8;

pub(super) async fn run(env: &Env, sizes: &Sizes, report: Report<'_>) -> anyhow::Result<()> {
    env.on_logical(CONNECTIONS, async |logical| {
        rates(logical, sizes, report).await
    })
    .await
}

async fn rates(env: &Env, sizes: &Sizes, report: Report<'_>) -> anyhow::Result<()> {
    for &rate in &sizes.latency_rates {
        let store = env.store("latency_notify", Retention::Delete).await?;
        let result = latency::measure(&store, rate, Wake::Notify, sizes).await;
        env.drop_store(&store).await?;
        let notify = result?;
        let notify_p99 = notify[2].value;
        for mut figure in notify {
            figure.measure.push_str(" (logical cluster)");
            report(figure);
        }
        let store = tailing_store(env, "latency_wal", TailMode::Messages).await?;
        let result = from_slot(&store, rate, sizes).await;
        drop_tailing(env, &store).await?;
        for (i, figure) in result?.into_iter().enumerate() {
            report(match i {
                2 => figure.limit(notify_p99).goal(Goal::RatioAtMost(1.0)),
                _ => figure,
            });
        }
    }
    Ok(())
}

/// One rate relayed from `store`'s slot: producers on another instance of
/// the store commit at the rate while a log-tailing relay publishes.
async fn from_slot(store: &PgOutboxStore, rate: u32, sizes: &Sizes) -> anyhow::Result<Vec<Figure>> {
    let spec = spec("bench-latency");
    let wal = wal_store(store, spec)?;
    reading(&wal).await?;
    let relay = WokenRelay::start_woken_by(&wal, spec, sizes.batch_size, wal.wakeup())?;
    let producers = PgOutboxStore::new(store.pool().clone(), store.options().clone())?;
    let plan = Plan::new(rate);
    let duration = sizes.latency_duration;
    let run = relay
        .steady(&producers, spec, plan, duration, SETTLE)
        .await?;
    let mut figures = run.figures(NAME, plan, ", read from the slot (message mode)");
    // The p99 is held to NOTIFY's, measured beside it; the p50 to the
    // latency scenario's goal at the rate.
    if plan.rate <= 200 {
        figures[1].goal = Goal::AtMost(2.0);
    }
    Ok(figures)
}
