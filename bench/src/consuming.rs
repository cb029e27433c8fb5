//! The consuming side shared by the consume and memory scenarios: a
//! consumer with the PostgreSQL inbox whose handler inserts one row.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use anyhow::bail;
use sqlx::AssertSqlSafe;
use tidings_consumer::{
    Consumer, ConsumerOptions, ConsumerReport, Handler, HandlerError, TxHandle, handler_fn,
};
use tidings_core::{Message, QueueSpec, Source};
use tidings_inbox::Inbox;
use tidings_postgres::{PgContext, PgOutboxStore};
use tidings_rabbitmq::{ConnectionOptions, RabbitSource, SourceOptions};
use tokio_util::sync::CancellationToken;

use crate::env::{create_table, table_in};
use crate::payload::Payload;

/// The consumer name the inbox records.
pub(crate) const CONSUMER: &str = "bench-billing";
/// Deliveries the source holds unsettled: enough for 8 handlers taking
/// batches of 16.
pub(crate) const PREFETCH: u16 = 128;
/// How long a consumer may take per thousand messages before the run fails.
const TIMEOUT_PER_THOUSAND: Duration = Duration::from_secs(10);

/// Creates the table the handler writes to.
pub(crate) async fn create_invoices(store: &PgOutboxStore) -> anyhow::Result<()> {
    let columns =
        "id bigserial primary key, order_id bigint not null, amount_cents bigint not null";
    create_table(store, "invoices", columns).await
}

/// The insert the handler runs.
pub(crate) fn insert_invoice_sql(store: &PgOutboxStore) -> String {
    format!(
        "insert into {} (order_id, amount_cents) values ($1, $2)",
        table_in(store, "invoices")
    )
}

/// Whether the handler fails, and how many times it ran: shared by every
/// clone of a handler made by [`invoice_handler`].
#[derive(Debug, Clone, Default)]
pub(crate) struct Gate {
    failing: Arc<AtomicBool>,
    calls: Arc<AtomicU64>,
}

impl Gate {
    /// Makes the handler fail with a transient error (`true`) or succeed.
    pub(crate) fn fail(&self, failing: bool) {
        self.failing.store(failing, Relaxed);
    }

    /// The handler's runs so far, failed ones included.
    pub(crate) fn calls(&self) -> u64 {
        self.calls.load(Relaxed)
    }
}

/// The handler of every consuming scenario: inserts one invoice row in the
/// inbox's transaction, or fails with a transient error while `gate` says
/// so.
pub(crate) fn invoice_handler(
    store: &PgOutboxStore,
    gate: &Gate,
) -> impl Handler<Payload, PgContext<'static>> {
    let sql = Arc::new(insert_invoice_sql(store));
    let gate = gate.clone();
    handler_fn(
        move |msg: Message<Payload>, tx: TxHandle<PgContext<'static>>| {
            let (sql, gate) = (sql.clone(), gate.clone());
            async move {
                gate.calls.fetch_add(1, Relaxed);
                if gate.failing.load(Relaxed) {
                    return Err(HandlerError::transient("the handler is down"));
                }
                let mut ctx = tx.lock().await;
                sqlx::query(AssertSqlSafe(sql.as_str()))
                    .bind(msg.payload.order_id)
                    .bind(msg.payload.amount_cents)
                    .execute(ctx.tx())
                    .await?;
                Ok::<_, HandlerError>(())
            }
        },
    )
}

/// Consumes `count` messages from the RabbitMQ `queue` with `concurrency`
/// handlers, up to `max_batch` deliveries per transaction; returns the time
/// from subscribing until the last was handled.
pub(crate) async fn consume(
    store: &PgOutboxStore,
    connection: ConnectionOptions,
    queue: &'static str,
    count: usize,
    concurrency: usize,
    max_batch: usize,
) -> anyhow::Result<Duration> {
    let source = RabbitSource::new(connection, SourceOptions::default().prefetch(PREFETCH));
    consume_from(store, source, queue, count, concurrency, max_batch).await
}

/// Consumes `count` messages of `queue` from `source`, as [`consume`].
pub(crate) async fn consume_from<S: Source>(
    store: &PgOutboxStore,
    source: S,
    queue: &'static str,
    count: usize,
    concurrency: usize,
    max_batch: usize,
) -> anyhow::Result<Duration> {
    let spec: &'static QueueSpec<Payload> = Box::leak(Box::new(QueueSpec::json(queue)));
    let handler = invoice_handler(store, &Gate::default());
    let consumer = Arc::new(
        Consumer::new(source, spec, handler)?
            .inbox(Inbox::new(store.inbox(), CONSUMER)?)
            .options(
                ConsumerOptions::default()
                    .concurrency(concurrency)
                    .max_batch(max_batch),
            ),
    );
    let run = {
        let consumer = consumer.clone();
        move |cancel| async move {
            consumer.run(cancel).await;
            Ok(())
        }
    };
    let took = run_until_settled(run, || consumer.report(), count, |_| {}).await?;
    let report = consumer.report();
    if report.processed as usize != count {
        bail!(
            "consumer handled {} of {count} messages: {report:?}",
            report.processed
        );
    }
    Ok(took)
}

/// Runs a consumer in a task of its own, `run` until the token it is
/// given fires, until `counts` show `count` messages settled, or for
/// [`TIMEOUT_PER_THOUSAND`] per thousand of them (and three more); then
/// stops it. `look` is called with the time since the start each time the
/// counts are looked at. Returns that time once the messages were settled.
pub(crate) async fn run_until_settled<F>(
    run: impl FnOnce(CancellationToken) -> F,
    counts: impl Fn() -> ConsumerReport,
    count: usize,
    mut look: impl FnMut(Duration),
) -> anyhow::Result<Duration>
where
    F: Future<Output = anyhow::Result<()>> + Send + 'static,
{
    let cancel = CancellationToken::new();
    let started = Instant::now();
    let task = tokio::spawn(run(cancel.clone()));
    let deadline = started + TIMEOUT_PER_THOUSAND * (count as u32 / 1_000 + 3);
    let took = loop {
        look(started.elapsed());
        let r = counts();
        let settled = (r.processed + r.duplicates + r.parked) as usize;
        if settled >= count || Instant::now() >= deadline {
            break started.elapsed();
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    cancel.cancel();
    task.await??;
    Ok(took)
}
