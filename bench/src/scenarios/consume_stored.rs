//! consume-stored: the consume scenario's messages, handler and options,
//! with the stored inbox: each batch of deliveries stored in a table of a
//! second store and acked, then handled from there. Its receive rate
//! (stored and acked) and its handled rate are set against the same
//! two-row transactions as consume, and beside today's inbox path (the
//! consume scenario's consumer, a transaction per message) in the same
//! run.
//!
//! The stored inbox runs with its defaults (the goal's figures):
//! `receive_batch` 256 (the prefetch of 128 bounds a batch first) and
//! relay options sized to the consumer's concurrency (claims of 32,
//! handled 8 at once). It runs again with wider claims and window
//! ([`WIDE_CLAIM`], [`WIDE_WINDOW`]): a measurement showed the handled
//! rate rising from 0.45–0.60 of today's path to 0.86 with them.

use tidings_core::relay::RelayOptions;
use tidings_postgres::Retention;

use crate::consuming::consume;
use crate::env::Env;
use crate::report::{Figure, Goal, Report};
use crate::sizes::Sizes;
use crate::stored_consuming::{StoredTimes, consume_stored, kept_store};

use super::consume::{Backlog, start};

const NAME: &str = "consume-stored";
/// Rows the stored inbox's handling side claims at once in the second run.
const WIDE_CLAIM: usize = 256;
/// Stored messages handled at once in the second run.
const WIDE_WINDOW: usize = 32;

pub(super) async fn run(env: &Env, sizes: &Sizes, report: Report<'_>) -> anyhow::Result<()> {
    let raw = env.store("cs_raw", Retention::Delete).await?;
    let today = env.store("cs_today", Retention::Delete).await?;
    let stored = env.store("cs_stored", Retention::Delete).await?;
    let kept = kept_store(env, "cs_kept").await?;
    let stored_wide = env.store("cs_wide", Retention::Delete).await?;
    let kept_wide = kept_store(env, "cs_wide_kept").await?;
    let queue = env.queue("bench-consume-stored").await?;
    let result = async {
        let count = sizes.consume_messages;
        let stores = [&raw, &today, &stored, &stored_wide];
        let (raw_rate, mut costs) = start(NAME, stores, sizes, &mut *report).await?;
        let backlog = Backlog::new(env, queue, count).await?;
        let amqp = env.amqp("tidings-bench-consumer");
        // Today's inbox path: a transaction per message, acked after it.
        backlog.fill().await?;
        let run = consume(&today, amqp.clone(), queue, count, sizes.clients, 1);
        let took = costs.measure("today's inbox", run).await?;
        let today_rate = Figure::rate(NAME, "today's inbox, handled", count, took);
        report(today_rate.clone().limit(raw_rate.value));

        // The stored inbox: stored and acked first, handled from the table;
        // with its defaults, then with wider claims.
        let wide = RelayOptions::default()
            .batch_size(WIDE_CLAIM)
            .publish_window(WIDE_WINDOW);
        let runs = [
            (&stored, &kept, None, "stored inbox"),
            (
                &stored_wide,
                &kept_wide,
                Some(wide),
                "stored inbox, wide claims",
            ),
        ];
        for (store, kept, relay, side) in runs {
            backlog.fill().await?;
            let clients = sizes.clients;
            let run = consume_stored(store, kept, amqp.clone(), queue, count, clients, relay);
            let times = costs.measure(side, run).await?;
            let goals = relay.is_none();
            stored_figures(
                &mut *report,
                side,
                count,
                times,
                &raw_rate,
                &today_rate,
                goals,
            );
        }
        costs.report(NAME, count, &mut *report);
        Ok(())
    }
    .await;
    env.remove(
        [&raw, &today, &stored, &kept, &stored_wide, &kept_wide],
        [queue],
    )
    .await?;
    result
}

/// The stored inbox's receive and handled rates, against two-row
/// transactions and beside today's inbox; held to the goals when `goals`.
fn stored_figures(
    report: Report<'_>,
    side: &str,
    count: usize,
    times: StoredTimes,
    raw: &Figure,
    today: &Figure,
    goals: bool,
) {
    let goal = |min: f64| {
        if goals {
            Goal::RatioAtLeast(min)
        } else {
            Goal::None
        }
    };
    let measure = format!("{side}, received (stored + acked)");
    let received = Figure::rate(NAME, &measure, count, times.received);
    report(received.clone().limit(raw.value));
    let mut vs_today = received;
    vs_today.measure += " vs today's inbox";
    report(vs_today.limit(today.value).goal(goal(1.5)));
    let handled = Figure::rate(NAME, &format!("{side}, handled"), count, times.handled);
    report(handled.clone().limit(raw.value));
    let mut vs_today = handled;
    vs_today.measure += " vs today's inbox";
    report(vs_today.limit(today.value).goal(goal(0.8)));
}
