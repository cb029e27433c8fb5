//! The consuming side with the stored inbox, shared by the consume-stored
//! and stored-outage scenarios: the consume scenario's consumer (inbox,
//! handler, options) receiving into a table of a second store and
//! handling from there.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::bail;
use tidings_consumer::{Consumer, ConsumerOptions, StoredConsumer, StoredInbox};
use tidings_core::relay::RelayOptions;
use tidings_core::{QueueSpec, Source};
use tidings_inbox::Inbox;
use tidings_postgres::{PgOutboxOptions, PgOutboxStore, Retention};
use tidings_rabbitmq::{ConnectionOptions, RabbitSource, SourceOptions};
use tokio_util::sync::CancellationToken;

use crate::consuming::{CONSUMER, Gate, PREFETCH, invoice_handler};
use crate::counting::CountingSource;
use crate::env::Env;
use crate::payload::Payload;

/// How long a stored consumer may take per thousand messages before the
/// run fails.
const TIMEOUT_PER_THOUSAND: Duration = Duration::from_secs(10);

/// A second store, in a schema of its own named after `prefix`, whose
/// outbox table keeps the received messages.
pub(crate) async fn kept_store(env: &Env, prefix: &str) -> anyhow::Result<PgOutboxStore> {
    let options = PgOutboxOptions::new()
        .retention(Retention::Delete)
        .layout(env.layout)
        .table("inbox_messages")
        .inbox_table("inbox_messages_marks");
    env.store_with(prefix, options).await
}

/// The RabbitMQ source of the consume scenario, counting what it
/// delivers and how each delivery is settled.
pub(crate) fn counting_source(connection: ConnectionOptions) -> CountingSource<RabbitSource> {
    CountingSource::new(RabbitSource::new(
        connection,
        SourceOptions::default().prefetch(PREFETCH),
    ))
}

/// The consume scenario's consumer over `source`, storing what it receives
/// in `kept` and handling it from there with the inbox of `store`.
pub(crate) fn stored_consumer<S: Source>(
    store: &PgOutboxStore,
    kept: &PgOutboxStore,
    source: S,
    queue: &'static str,
    concurrency: usize,
    gate: &Gate,
    relay: Option<RelayOptions>,
) -> anyhow::Result<impl StoredRun> {
    let spec: &'static QueueSpec<Payload> = Box::leak(Box::new(QueueSpec::json(queue)));
    let consumer = Consumer::new(source, spec, invoice_handler(store, gate))?
        .inbox(Inbox::new(store.inbox(), CONSUMER)?)
        .options(ConsumerOptions::default().concurrency(concurrency))
        .stored(match relay {
            Some(options) => StoredInbox::new(kept.clone()).relay_options(options),
            None => StoredInbox::new(kept.clone()),
        })?;
    Ok(consumer)
}

/// A stored consumer, whatever its source and handler types.
pub(crate) trait StoredRun: Send + Sync + 'static {
    /// Runs until `cancel` fires.
    fn run_until(
        &self,
        cancel: CancellationToken,
    ) -> impl Future<Output = anyhow::Result<()>> + Send;

    /// What the consumer has done so far.
    fn counts(&self) -> tidings_consumer::ConsumerReport;
}

impl<S, T, C, H, I, St> StoredRun for StoredConsumer<S, T, C, H, I, St>
where
    S: Source,
    T: Send + 'static,
    C: tidings_core::Codec<T> + 'static,
    I: tidings_core::InboxAttempts,
    H: tidings_consumer::Handler<T, I::Tx>,
    St: tidings_core::StageEvents,
    Self: Send + Sync,
{
    async fn run_until(&self, cancel: CancellationToken) -> anyhow::Result<()> {
        self.run(cancel).await?;
        Ok(())
    }

    fn counts(&self) -> tidings_consumer::ConsumerReport {
        self.report()
    }
}

/// How long a stored consumer took over `count` messages.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StoredTimes {
    /// From subscribing until every message was stored and acked.
    pub(crate) received: Duration,
    /// From subscribing until every message's effect was committed.
    pub(crate) handled: Duration,
}

/// Consumes the `count` messages waiting in `queue` with a stored inbox
/// over `kept`, as [`crate::consuming::consume`] does with today's inbox;
/// its handling side with `relay` where set, the stored inbox's defaults
/// otherwise.
pub(crate) async fn consume_stored(
    store: &PgOutboxStore,
    kept: &PgOutboxStore,
    connection: ConnectionOptions,
    queue: &'static str,
    count: usize,
    concurrency: usize,
    relay: Option<RelayOptions>,
) -> anyhow::Result<StoredTimes> {
    let source = counting_source(connection);
    let seen = source.counts();
    let consumer = Arc::new(stored_consumer(
        store,
        kept,
        source,
        queue,
        concurrency,
        &Gate::default(),
        relay,
    )?);
    let cancel = CancellationToken::new();
    let started = Instant::now();
    let task = tokio::spawn({
        let (consumer, cancel) = (consumer.clone(), cancel.clone());
        async move { consumer.run_until(cancel).await }
    });
    let deadline = started + TIMEOUT_PER_THOUSAND * (count as u32 / 1_000 + 3);
    let mut received = None;
    let handled = loop {
        if received.is_none() && seen.seen().acked as usize >= count {
            received = Some(started.elapsed());
        }
        let r = consumer.counts();
        let settled = (r.processed + r.duplicates + r.parked) as usize;
        if settled >= count || Instant::now() >= deadline {
            break started.elapsed();
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    cancel.cancel();
    task.await??;
    let report = consumer.counts();
    let seen = seen.seen();
    if report.processed as usize != count || seen.acked as usize != count {
        bail!(
            "stored consumer handled {} and acked {} of {count} messages: {report:?}, {seen:?}",
            report.processed,
            seen.acked
        );
    }
    Ok(StoredTimes {
        received: received.unwrap_or(handled),
        handled,
    })
}
