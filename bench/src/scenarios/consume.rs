//! consume: messages from RabbitMQ handled by the consumer runner with the
//! PostgreSQL inbox, the handler inserting one row, against the same
//! two-row transactions (inbox row and business row) in plain SQL. The
//! consumer runs twice: with a transaction per message, and with batches
//! of the messages already waiting (`ConsumerOptions::max_batch`).

use sqlx::AssertSqlSafe;
use tidings_postgres::{PgOutboxStore, Retention};
use uuid::Uuid;

use crate::clients::run_clients;
use crate::consuming::{CONSUMER, PREFETCH, consume, create_invoices, insert_invoice_sql};
use crate::cpu::CpuTime;
use crate::env::{Env, table_in};
use crate::payload::{Payload, envelopes};
use crate::raw_consume::receive_and_ack;
use crate::raw_publish::RawPublisher;
use crate::report::{Figure, Goal, Report};
use crate::sizes::Sizes;

const NAME: &str = "consume";
/// The confirm window while filling the queue.
const FILL_WINDOW: usize = 500;

pub(super) async fn run(env: &Env, sizes: &Sizes, report: Report<'_>) -> anyhow::Result<()> {
    let raw = env.store("consume_raw", Retention::Delete).await?;
    let single = env.store("consume", Retention::Delete).await?;
    let batched = env.store("consume_batch", Retention::Delete).await?;
    let queue = env.queue("bench-consume").await?;
    let result = async {
        create_invoices(&raw).await?;
        create_invoices(&single).await?;
        create_invoices(&batched).await?;
        let count = sizes.consume_messages;
        let mut cpu = Vec::new();
        let (raw_rate, spent) = two_row_limit(NAME, &raw, sizes, &mut *report).await?;
        cpu.push(("raw two-row transactions", spent));

        let publisher = RawPublisher::connect(&env.amqp_url).await?;
        let messages = envelopes(queue, count)?;
        // The broker alone: receiving and acking, no database.
        publisher.publish_all(&messages, FILL_WINDOW).await?;
        let before = CpuTime::now();
        let broker_took = receive_and_ack(&env.amqp_url, queue, count, PREFETCH).await?;
        cpu.push(("raw receive + ack", CpuTime::now() - before));
        let broker_rate = Figure::rate(NAME, "raw receive + ack (broker only)", count, broker_took);
        report(broker_rate.clone());
        // One transaction per message, then batches of ready messages.
        let amqp = env.amqp("tidings-bench-consumer");
        publisher.publish_all(&messages, FILL_WINDOW).await?;
        let before = CpuTime::now();
        let took = consume(&single, amqp.clone(), queue, count, sizes.clients, 1).await?;
        cpu.push(("one transaction each", CpuTime::now() - before));
        let mut one_each =
            Figure::rate(NAME, "consumed messages, one transaction each", count, took)
                .limit(raw_rate.value);
        report(one_each.clone());
        // Where broker and database share the CPU, their costs add up.
        let shared = 1.0 / (1.0 / raw_rate.value + 1.0 / broker_rate.value);
        one_each.measure += " vs database + broker costs added";
        report(one_each.limit(shared));
        publisher.publish_all(&messages, FILL_WINDOW).await?;
        let batch = sizes.consume_batch;
        let before = CpuTime::now();
        let took = consume(&batched, amqp, queue, count, sizes.clients, batch).await?;
        cpu.push(("batches", CpuTime::now() - before));
        let measure = format!("consumed messages, batches of up to {batch}");
        report(
            Figure::rate(NAME, &measure, count, took)
                .limit(raw_rate.value)
                .goal(Goal::RatioAtLeast(0.9)),
        );
        for (side, cpu) in cpu {
            report(Figure::cpu_per_thousand(NAME, side, cpu, count));
        }
        Ok(())
    }
    .await;
    env.remove([&raw, &single, &batched], [queue]).await?;
    result
}

/// The raw limit, two-row transactions of `sizes`' consume messages on
/// `raw`, reported under `name`; its rate and the CPU time it took.
pub(super) async fn two_row_limit(
    name: &'static str,
    raw: &PgOutboxStore,
    sizes: &Sizes,
    report: Report<'_>,
) -> anyhow::Result<(Figure, CpuTime)> {
    let count = sizes.consume_messages;
    let before = CpuTime::now();
    let took = two_row_transactions(raw, sizes.clients, count).await?;
    let spent = CpuTime::now() - before;
    let rate = Figure::rate(name, "raw two-row transactions", count, took);
    report(rate.clone());
    Ok((rate, spent))
}

/// What the consumer does per message, by hand: the inbox row and the
/// business row in one transaction.
pub(super) async fn two_row_transactions(
    store: &PgOutboxStore,
    clients: usize,
    count: usize,
) -> anyhow::Result<std::time::Duration> {
    let inbox_sql = format!(
        "insert into {} (consumer, event_id) values ($1, $2) on conflict do nothing",
        table_in(store, store.options().get_inbox_table())
    );
    let invoice_sql = insert_invoice_sql(store);
    let pool = store.pool().clone();
    run_clients(clients, count, move |i| {
        let (pool, inbox_sql, invoice_sql) = (pool.clone(), inbox_sql.clone(), invoice_sql.clone());
        async move {
            let payload = Payload::new(i as i64);
            let mut tx = pool.begin().await?;
            sqlx::query(AssertSqlSafe(inbox_sql))
                .bind(CONSUMER)
                .bind(Uuid::now_v7())
                .execute(&mut *tx)
                .await?;
            sqlx::query(AssertSqlSafe(invoice_sql))
                .bind(payload.order_id)
                .bind(payload.amount_cents)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(())
        }
    })
    .await
}
