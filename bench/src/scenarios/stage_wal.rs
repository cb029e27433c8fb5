//! stage-wal: the stage scenario's transactions (one business row and one
//! event each, from concurrent clients) into log-tailing stores, in
//! message mode, where the event is a logical decoding message and no
//! row, and in table mode, where it is a row as usual, against the same
//! raw two-row transactions; all on the cluster with `wal_level=logical`,
//! in the same run.
//!
//! No relay reads the slots meanwhile: staging is measured alone, as the
//! stage scenario measures it. The sides alternate in rounds in every
//! order, as there.

use std::time::Duration;

use tidings_postgres::{PgOutboxStore, Retention, TailMode};

use super::stage::{create_orders, stage_raw, stage_tidings};
use crate::cpu::CpuTime;
use crate::env::Env;
use crate::report::{Figure, Goal, Report};
use crate::rounds;
use crate::sizes::Sizes;
use crate::tailing::{drop_tailing, mode_label, tailing_store};

const NAME: &str = "stage-wal";
/// Rounds each side runs: every order of the three sides twice.
const ROUNDS: usize = 12;

pub(super) async fn run(env: &Env, sizes: &Sizes, report: Report<'_>) -> anyhow::Result<()> {
    let logical = env.logical(sizes.clients as u32 + 2).await?;
    let result = measure(&logical, sizes, report).await;
    logical.close().await;
    result
}

async fn measure(env: &Env, sizes: &Sizes, report: Report<'_>) -> anyhow::Result<()> {
    let raw = env.store("stage_wal_raw", Retention::Delete).await?;
    let messages = tailing_store(env, "stage_wal_msg", TailMode::Messages).await;
    let table = tailing_store(env, "stage_wal_tab", TailMode::Table).await;
    let result = match (&messages, &table) {
        (Ok(messages), Ok(table)) => rounds_of(&[&raw, messages, table], sizes).await,
        _ => Ok(Took::default()),
    };
    env.drop_store(&raw).await?;
    for store in [&messages, &table].into_iter().flatten() {
        drop_tailing(env, store).await?;
    }
    messages?;
    table?;
    let took = result?;
    let total = sizes.stage_transactions.div_ceil(ROUNDS) * ROUNDS;
    let limit = Figure::rate(NAME, "raw two-row transactions", total, took.time[0]);
    report(limit.clone());
    let sides = [
        (TailMode::Messages, Goal::RatioAtLeast(0.99)),
        (TailMode::Table, Goal::None),
    ];
    for (i, (mode, goal)) in sides.into_iter().enumerate() {
        let measure = format!("staged transactions, {}", mode_label(mode));
        report(
            Figure::rate(NAME, &measure, total, took.time[i + 1])
                .limit(limit.value)
                .goal(goal),
        );
    }
    let names = ["raw", "staged, message mode", "staged, table mode"];
    for (side, name) in names.into_iter().enumerate() {
        report(Figure::cpu_per_thousand(NAME, name, took.cpu[side], total));
    }
    Ok(())
}

/// The time each side took over all rounds and its CPU time: the raw
/// transactions, message mode, table mode.
#[derive(Default)]
struct Took {
    time: [Duration; 3],
    cpu: [CpuTime; 3],
}

/// Runs the rounds on `stores`: the raw side's table, then the two
/// log-tailing stores.
async fn rounds_of(stores: &[&PgOutboxStore; 3], sizes: &Sizes) -> anyhow::Result<Took> {
    for store in stores {
        create_orders(store).await?;
    }
    let (clients, per_round) = (sizes.clients, sizes.stage_transactions.div_ceil(ROUNDS));
    let mut took = Took::default();
    let orders = rounds::balanced([0, 1, 2]);
    for round in 0..ROUNDS {
        for side in orders[round % orders.len()] {
            let before = CpuTime::now();
            took.time[side] += match side {
                0 => stage_raw(stores[0], clients, per_round).await?,
                _ => stage_tidings(stores[side], clients, per_round).await?,
            };
            took.cpu[side] += CpuTime::now() - before;
        }
    }
    Ok(took)
}
