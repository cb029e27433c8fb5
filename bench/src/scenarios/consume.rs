//! consume: messages from RabbitMQ handled by the consumer runner with the
//! PostgreSQL inbox, the handler inserting one row, against the same
//! two-row transactions (inbox row and business row) in plain SQL. The
//! consumer runs twice: with a transaction per message, and with batches
//! of the messages already waiting (`ConsumerOptions::max_batch`).

use sqlx::AssertSqlSafe;
use tidings_core::Envelope;
use tidings_postgres::{PgOutboxStore, Retention};
use uuid::Uuid;

use crate::clients::run_clients;
use crate::consuming::{CONSUMER, PREFETCH, consume, create_invoices, insert_invoice_sql};
use crate::costs::Costs;
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
        let count = sizes.consume_messages;
        let (raw_rate, mut costs) =
            start(NAME, [&raw, &single, &batched], sizes, &mut *report).await?;
        let backlog = Backlog::new(env, queue, count).await?;
        // The broker alone: receiving and acking, no database.
        backlog.fill().await?;
        let broker = receive_and_ack(&env.amqp_url, queue, count, PREFETCH);
        let broker_took = costs.measure("raw receive + ack", broker).await?;
        let broker_rate = Figure::rate(NAME, "raw receive + ack (broker only)", count, broker_took);
        report(broker_rate.clone());
        // One transaction per message, then batches of ready messages.
        let amqp = env.amqp("tidings-bench-consumer");
        backlog.fill().await?;
        let run = consume(&single, amqp.clone(), queue, count, sizes.clients, 1);
        let took = costs.measure("one transaction each", run).await?;
        let mut one_each =
            Figure::rate(NAME, "consumed messages, one transaction each", count, took)
                .limit(raw_rate.value);
        report(one_each.clone());
        // Where broker and database share the CPU, their costs add up.
        let shared = 1.0 / (1.0 / raw_rate.value + 1.0 / broker_rate.value);
        one_each.measure += " vs database + broker costs added";
        report(one_each.limit(shared));
        backlog.fill().await?;
        let batch = sizes.consume_batch;
        let run = consume(&batched, amqp, queue, count, sizes.clients, batch);
        let took = costs.measure("batches", run).await?;
        let measure = format!("consumed messages, batches of up to {batch}");
        report(
            Figure::rate(NAME, &measure, count, took)
                .limit(raw_rate.value)
                .goal(Goal::RatioAtLeast(0.9)),
        );
        costs.report(NAME, count, &mut *report);
        Ok(())
    }
    .await;
    env.remove([&raw, &single, &batched], [queue]).await?;
    result
}

/// The start of consume scenario `name` on `stores`: the invoices table
/// made in each, then the raw limit, two-row transactions of `sizes`'
/// consume messages on the first, reported; its rate, and its CPU time as
/// the first of the scenario's costs.
pub(super) async fn start<const N: usize>(
    name: &'static str,
    stores: [&PgOutboxStore; N],
    sizes: &Sizes,
    report: Report<'_>,
) -> anyhow::Result<(Figure, Costs)> {
    for store in stores {
        create_invoices(store).await?;
    }
    let count = sizes.consume_messages;
    let mut costs = Costs::default();
    let raw = two_row_transactions(stores[0], sizes.clients, count);
    let took = costs.measure("raw two-row transactions", raw).await?;
    let rate = Figure::rate(name, "raw two-row transactions", count, took);
    report(rate.clone());
    Ok((rate, costs))
}

/// The messages a consume scenario fills its queue with before each run,
/// and the connection it publishes them on.
pub(super) struct Backlog {
    publisher: RawPublisher,
    messages: Vec<Envelope>,
}

impl Backlog {
    /// `count` messages to `queue`.
    pub(super) async fn new(env: &Env, queue: &str, count: usize) -> anyhow::Result<Self> {
        Ok(Self {
            publisher: RawPublisher::connect(&env.amqp_url).await?,
            messages: envelopes(queue, count)?,
        })
    }

    /// Publishes every message, confirmed [`FILL_WINDOW`] at a time.
    pub(super) async fn fill(&self) -> anyhow::Result<()> {
        self.publisher
            .publish_all(&self.messages, FILL_WINDOW)
            .await?;
        Ok(())
    }
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
