//! The consuming side with the stored inbox, shared by the consume-stored
//! and stored-outage scenarios: the consume scenario's consumer (inbox,
//! handler, options) receiving into a table of a second store and
//! handling from there.

use std::sync::Arc;
use std::time::Duration;

use anyhow::bail;
use tidings_consumer::{Consumer, ConsumerOptions, StoredConsumer, StoredInbox};
use tidings_core::relay::RelayOptions;
use tidings_core::{QueueSpec, Source};
use tidings_inbox::Inbox;
use tidings_postgres::{PgOutboxOptions, PgOutboxStore, Retention};
use tidings_rabbitmq::{ConnectionOptions, RabbitSource, SourceOptions};
use tokio_util::sync::CancellationToken;

use crate::consuming::{CONSUMER, Gate, PREFETCH, invoice_handler, run_until_settled};
use crate::counting::{Count, CountingSource};
use crate::env::Env;
use crate::payload::Payload;

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
    let mut received = None;
    let run = {
        let consumer = consumer.clone();
        move |cancel| async move { consumer.run_until(cancel).await }
    };
    let handled = run_until_settled(
        run,
        || consumer.counts(),
        count,
        |elapsed| {
            if received.is_none() && seen.seen()[Count::Acked] as usize >= count {
                received = Some(elapsed);
            }
        },
    )
    .await?;
    let report = consumer.counts();
    let seen = seen.seen();
    if report.processed as usize != count || seen[Count::Acked] as usize != count {
        bail!(
            "stored consumer handled {} and acked {} of {count} messages: {report:?}, {seen:?}",
            report.processed,
            seen[Count::Acked]
        );
    }
    Ok(StoredTimes {
        received: received.unwrap_or(handled),
        handled,
    })
}
