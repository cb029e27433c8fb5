//! consume-stored: the consume scenario's messages, handler and options,
//! with the stored inbox: each batch of deliveries stored in a table of a
//! second store and acked, then handled from there. Its receive rate
//! (stored and acked) and its handled rate are set against the same
//! two-row transactions as consume, and beside today's inbox path (the
//! consume scenario's consumer, a transaction per message) in the same
//! run.
//!
//! The stored inbox runs with its defaults: `receive_batch` 256 (the
//! prefetch of 128 bounds a batch first) and relay options sized to the
//! consumer's concurrency.

use tidings_postgres::Retention;

use crate::consuming::{consume, create_invoices};
use crate::cpu::CpuTime;
use crate::env::Env;
use crate::payload::envelopes;
use crate::raw_publish::RawPublisher;
use crate::report::{Figure, Goal, Report};
use crate::sizes::Sizes;
use crate::stored_consuming::{consume_stored, kept_store};

use super::consume::two_row_transactions;

const NAME: &str = "consume-stored";
/// The confirm window while filling the queue.
const FILL_WINDOW: usize = 500;

pub(super) async fn run(env: &Env, sizes: &Sizes, report: Report<'_>) -> anyhow::Result<()> {
    let raw = env.store("cs_raw", Retention::Delete).await?;
    let today = env.store("cs_today", Retention::Delete).await?;
    let stored = env.store("cs_stored", Retention::Delete).await?;
    let kept = kept_store(env, "cs_kept").await?;
    let queue = env.queue("bench-consume-stored").await?;
    let result = async {
        create_invoices(&raw).await?;
        create_invoices(&today).await?;
        create_invoices(&stored).await?;
        let count = sizes.consume_messages;
        let mut cpu = Vec::new();
        let before = CpuTime::now();
        let raw_took = two_row_transactions(&raw, sizes.clients, count).await?;
        cpu.push(("raw two-row transactions", CpuTime::now() - before));
        let raw_rate = Figure::rate(NAME, "raw two-row transactions", count, raw_took);
        report(raw_rate.clone());

        let publisher = RawPublisher::connect(&env.amqp_url).await?;
        let messages = envelopes(queue, count)?;
        let amqp = env.amqp("tidings-bench-consumer");
        // Today's inbox path: a transaction per message, acked after it.
        publisher.publish_all(&messages, FILL_WINDOW).await?;
        let before = CpuTime::now();
        let took = consume(&today, amqp.clone(), queue, count, sizes.clients, 1).await?;
        cpu.push(("today's inbox", CpuTime::now() - before));
        let today_rate = Figure::rate(NAME, "today's inbox, handled", count, took);
        report(today_rate.clone().limit(raw_rate.value));

        // The stored inbox: stored and acked first, handled from the table.
        publisher.publish_all(&messages, FILL_WINDOW).await?;
        let before = CpuTime::now();
        let times = consume_stored(&stored, &kept, amqp, queue, count, sizes.clients).await?;
        cpu.push(("stored inbox", CpuTime::now() - before));
        let received = Figure::rate(
            NAME,
            "stored inbox, received (stored + acked)",
            count,
            times.received,
        );
        report(received.clone().limit(raw_rate.value));
        let mut vs_today = received.clone();
        vs_today.measure += " vs today's inbox";
        report(
            vs_today
                .limit(today_rate.value)
                .goal(Goal::RatioAtLeast(1.5)),
        );
        let handled = Figure::rate(NAME, "stored inbox, handled", count, times.handled);
        report(handled.clone().limit(raw_rate.value));
        let mut vs_today = handled;
        vs_today.measure += " vs today's inbox";
        report(
            vs_today
                .limit(today_rate.value)
                .goal(Goal::RatioAtLeast(0.8)),
        );
        for (side, cpu) in cpu {
            report(Figure::cpu_per_thousand(NAME, side, cpu, count));
        }
        Ok(())
    }
    .await;
    env.remove([&raw, &today, &stored, &kept], [queue]).await?;
    result
}
