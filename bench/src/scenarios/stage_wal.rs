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

use tidings_postgres::{PgOutboxStore, Retention, TailMode};

use super::stage::{Orders, ROUNDS, Took, stage_rounds};
use crate::env::Env;
use crate::report::{Figure, Goal, Report};
use crate::sizes::Sizes;
use crate::tailing::{drop_tailing, mode_label, tailing_store};

const NAME: &str = "stage-wal";

pub(super) async fn run(env: &Env, sizes: &Sizes, report: Report<'_>) -> anyhow::Result<()> {
    let connections = sizes.clients as u32 + 2;
    env.on_logical(connections, async |logical| {
        measure(logical, sizes, report).await
    })
    .await
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

/// Runs the rounds on `stores`: the raw side's table, then the two
/// log-tailing stores.
async fn rounds_of(stores: &[&PgOutboxStore; 3], sizes: &Sizes) -> anyhow::Result<Took> {
    let orders = [
        Orders::create(stores[0]).await?,
        Orders::create(stores[1]).await?,
        Orders::create(stores[2]).await?,
    ];
    stage_rounds(&orders, sizes).await
}
