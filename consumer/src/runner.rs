//! The consumer: subscribe, dispatch, restart after source failures.

use std::future::Future;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use tidings_core::give_up::GiveUpHook;
use tidings_core::lifecycle::{Step, StepError};
use tidings_core::port::error_chain;
use tidings_core::{Codec, HybridClock, InboxAttempts, InboxStore, Source, SpecError};
use tidings_inbox::{Inbox, NoInbox};
use tokio_util::sync::CancellationToken;

use crate::dispatch::{StreamEnd, consume};
use crate::handler::Handler;
use crate::isolation::Isolation;
use crate::metric::Metrics;
use crate::parts::PartsOf;
use crate::process::Pipeline;
use crate::report::Counters;
use crate::typed::Types;
use crate::{ConsumerOptions, ConsumerReport, QueueRef};

/// Consumes `queue` from `source` until `cancel` fires: decodes each
/// delivery, dedupes it through `inbox`, runs `handler` in the inbox's
/// transaction and settles it. Source failures (a dropped connection) are
/// logged and the queue is subscribed again with backoff.
///
/// # Errors
///
/// [`SpecError::EmptyName`], [`SpecError::NameTooLong`] or
/// [`SpecError::IllegalName`] when the queue's name is not a legal name;
/// nothing is consumed then. Failures while consuming are logged and
/// retried, never returned.
///
/// ```
/// use tidings_consumer::{ConsumerOptions, HandlerError, TxHandle, handler_fn, run_consumer};
/// use tidings_core::memory::{MemoryBroker, MemoryContext, MemoryStore};
/// use tidings_core::{Message, QueueSpec};
/// use tidings_inbox::Inbox;
/// use tokio_util::sync::CancellationToken;
///
/// static ORDERS: QueueSpec<u64> = QueueSpec::json("orders");
///
/// async fn bill(msg: Message<u64>, tx: TxHandle<MemoryContext>) -> Result<(), HandlerError> {
///     tx.lock().await.insert("invoices", msg.payload.to_string(), "billed");
///     Ok(())
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), tidings_core::SpecError> {
/// let broker = MemoryBroker::new();
/// broker.declare_queue("orders");
/// let inbox = Inbox::new(MemoryStore::new(), "billing")?;
/// let cancel = CancellationToken::new();
/// cancel.cancel(); // here, to return at once; a service cancels it on shutdown
/// let options = ConsumerOptions::default();
/// let report = run_consumer(broker, &ORDERS, handler_fn(bill), inbox, options, cancel).await?;
/// assert_eq!(report.processed, 0);
/// # Ok(())
/// # }
/// ```
pub async fn run_consumer<S, T, C, H, I>(
    source: S,
    queue: impl Into<QueueRef<T, C>>,
    handler: H,
    inbox: Inbox<I>,
    options: ConsumerOptions,
    cancel: CancellationToken,
) -> Result<ConsumerReport, SpecError>
where
    S: Source,
    T: Send + 'static,
    C: Codec<T> + 'static,
    I: InboxAttempts,
    H: Handler<T, I::Tx>,
{
    let consumer = Consumer::new(source, queue, handler)?
        .inbox(inbox)
        .options(options);
    consumer.run(cancel).await;
    Ok(consumer.report())
}

/// A consumer of one queue, runnable as a lifecycle step.
///
/// ```
/// use tidings_consumer::{Consumer, HandlerError, TxHandle, handler_fn};
/// use tidings_core::memory::{MemoryBroker, MemoryContext, MemoryStore};
/// use tidings_core::{Message, QueueSpec};
/// use tidings_inbox::Inbox;
///
/// static ORDERS: QueueSpec<u64> = QueueSpec::json("orders");
///
/// async fn bill(msg: Message<u64>, tx: TxHandle<MemoryContext>) -> Result<(), HandlerError> {
///     tx.lock().await.insert("invoices", msg.payload.to_string(), "billed");
///     Ok(())
/// }
///
/// let store = MemoryStore::new();
/// let broker = MemoryBroker::new();
/// broker.declare_queue("orders");
/// let consumer = Consumer::new(broker, &ORDERS, handler_fn(bill))
///     .unwrap()
///     .inbox(Inbox::new(store, "billing").unwrap());
/// // LifecyclePlan::new().step("billing", consumer)
/// ```
pub struct Consumer<S, T: 'static, C: 'static, H, I = NoInbox> {
    source: S,
    queue: QueueRef<T, C>,
    handler: H,
    inbox: Inbox<I>,
    options: ConsumerOptions,
    /// Each event type's settings, with per-type handlers.
    pub(crate) types: Option<Types>,
    hlc: Option<HybridClock>,
    counters: Arc<Counters>,
    /// Runs before a message is parked, if set.
    pub(crate) give_up: Option<GiveUpHook>,
}

impl<S, T, C, H> Consumer<S, T, C, H, NoInbox>
where
    S: Source,
    T: Send + 'static,
    C: Codec<T> + 'static,
{
    /// A consumer without an inbox (for idempotent handlers); add one with
    /// [`inbox`](Self::inbox).
    ///
    /// # Errors
    ///
    /// [`SpecError::EmptyName`], [`SpecError::NameTooLong`] or
    /// [`SpecError::IllegalName`] when the queue's name is not a legal name.
    pub fn new(source: S, queue: impl Into<QueueRef<T, C>>, handler: H) -> Result<Self, SpecError> {
        let queue = queue.into();
        queue.validate()?;
        let inbox = Inbox::new(NoInbox, queue.name())?;
        Ok(Self {
            source,
            queue,
            handler,
            inbox,
            options: ConsumerOptions::default(),
            types: None,
            hlc: None,
            counters: Arc::default(),
            give_up: None,
        })
    }
}

impl<S, T, C, H, I> Consumer<S, T, C, H, I> {
    /// Dedupes through `inbox`; the handler then receives its transaction.
    /// Set a [give-up hook](Self::give_up) after this: one set before,
    /// for the previous inbox's transactions, is dropped.
    pub fn inbox<J: InboxAttempts>(self, inbox: Inbox<J>) -> Consumer<S, T, C, H, J> {
        if self.give_up.is_some() {
            tracing::warn!(
                "a give-up hook set before the consumer's inbox is dropped; set it after"
            );
        }
        Consumer {
            source: self.source,
            queue: self.queue,
            handler: self.handler,
            inbox,
            options: self.options,
            types: self.types,
            hlc: self.hlc,
            counters: self.counters,
            give_up: None,
        }
    }

    /// Sets the options.
    pub fn options(mut self, options: ConsumerOptions) -> Self {
        self.options = options;
        self
    }

    /// Merges each delivery's hybrid logical clock stamp into `hlc` before
    /// the handler runs, so events the handler stages through a store that
    /// shares this clock sort after the event that caused them.
    pub fn hybrid_clock(mut self, hlc: HybridClock) -> Self {
        self.hlc = Some(hlc);
        self
    }

    /// What the consumer has done so far.
    pub fn report(&self) -> ConsumerReport {
        self.counters.report()
    }
}

impl<S, T, C, H, I> Consumer<S, T, C, H, I>
where
    S: Source,
    T: Send + 'static,
    C: Codec<T> + 'static,
    I: InboxAttempts,
    H: Handler<T, I::Tx>,
{
    /// Consumes until `cancel` fires, subscribing again with backoff after
    /// source failures.
    pub async fn run(&self, cancel: CancellationToken) {
        if let Some(refusal) = self.refusal() {
            tracing::error!(%refusal, "consumer not started");
            return;
        }
        let pipeline = self.pipeline(&cancel, self.options);
        self.subscribed(&cancel, |stream| consume(&pipeline, stream, &cancel))
            .await;
    }

    /// The pipeline every delivery goes through, with `options`, stopping
    /// retries when `cancel` fires.
    pub(crate) fn pipeline(
        &self,
        cancel: &CancellationToken,
        options: ConsumerOptions,
    ) -> Arc<Pipeline<PartsOf<T, C, H, I>>> {
        Arc::new(Pipeline {
            queue: self.queue.clone(),
            handler: self.handler.clone(),
            inbox: self.inbox.clone(),
            options,
            types: self.types.as_ref().map(|types| types.resolve(options)),
            hlc: self.hlc.clone(),
            counters: self.counters.clone(),
            metrics: Metrics::new(self.queue.name(), self.inbox.consumer()),
            isolation: Isolation::default(),
            system: self.source.messaging_system(),
            cancel: cancel.clone(),
            give_up: self.give_up.clone(),
        })
    }
}

impl<S: Source, T, C, H, I> Consumer<S, T, C, H, I> {
    /// Subscribes to the queue and hands each stream to `take` until
    /// `cancel` fires, subscribing again with backoff after source
    /// failures.
    pub(crate) async fn subscribed<F, Fut>(&self, cancel: &CancellationToken, mut take: F)
    where
        F: FnMut(S::Stream) -> Fut,
        Fut: Future<Output = StreamEnd>,
    {
        let queue = self.queue.name();
        let mut failures = 0;
        while !cancel.is_cancelled() {
            // A broker that does not answer must not hold up a shutdown.
            let subscribed = tokio::select! {
                () = cancel.cancelled() => break,
                subscribed = self.source.subscribe(queue) => subscribed,
            };
            let problem = match subscribed {
                Ok(stream) => {
                    tracing::info!(messaging.destination.name = queue, "consuming");
                    match take(stream).await {
                        StreamEnd::Cancelled => break,
                        StreamEnd::Closed => {
                            failures = 0;
                            "the delivery stream closed".to_owned()
                        }
                        StreamEnd::Failed(e) => error_chain(&e),
                    }
                }
                Err(e) => error_chain(&e),
            };
            failures += 1;
            let delay = self.options.restart_backoff.delay(failures);
            tracing::error!(messaging.destination.name = queue, error = %problem, restart_in = ?delay, "consumer lost its source; subscribing again");
            tokio::select! {
                () = cancel.cancelled() => break,
                () = tokio::time::sleep(delay) => {}
            }
        }
        tracing::info!(messaging.destination.name = queue, report = ?self.report(), "consumer stopped");
    }
}

impl<S, T, C, H, I: InboxStore> Consumer<S, T, C, H, I> {
    /// Why the consumer cannot start: it asks for an isolation level its
    /// inbox store does not offer.
    pub(crate) fn refusal(&self) -> Option<String> {
        let store = self.inbox.store();
        let by_type = self.types.iter().flat_map(Types::isolation_levels);
        let level = (self.options.isolation.into_iter().chain(by_type))
            .find(|level| !store.offers_isolation(*level))?;
        Some(format!(
            "consumer {:?} asks for {level} transactions, which its inbox store does not offer",
            self.inbox.consumer()
        ))
    }

    /// The consumer's options and, with per-type handlers, each type's.
    pub(crate) fn every_options(&self) -> Vec<ConsumerOptions> {
        let by_type = self.types.iter().flat_map(|types| types.each(self.options));
        std::iter::once(self.options).chain(by_type).collect()
    }

    /// The consumer's source, queue, inbox and options.
    pub(crate) fn parts(&self) -> (&S, &QueueRef<T, C>, &Inbox<I>, &ConsumerOptions) {
        (&self.source, &self.queue, &self.inbox, &self.options)
    }
}

impl<S, T, C, H, I> Step for Consumer<S, T, C, H, I>
where
    S: Source,
    T: Send + 'static,
    C: Codec<T> + 'static,
    I: InboxAttempts,
    H: Handler<T, I::Tx>,
{
    fn run(&self, cancel: CancellationToken) -> BoxFuture<'_, Result<(), StepError>> {
        async move {
            if let Some(refusal) = self.refusal() {
                return Err(refusal.into());
            }
            Consumer::run(self, cancel).await;
            Ok(())
        }
        .boxed()
    }
}
