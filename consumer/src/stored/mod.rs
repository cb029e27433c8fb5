//! The stored inbox: a consumer that stores each message it receives in a
//! table (or collection) of its own and acks it at once, then handles the
//! stored messages from there.
//!
//! The table is an outbox table: a [`StoredInbox`] takes any outbox store
//! that can [stage events on its own](StageEvents), usually a second
//! PostgreSQL or MongoDB store naming its own table, or the in-memory
//! store. Receiving stages each batch of deliveries the source has ready
//! in one transaction, under the consumer's name as their route, skipping
//! ids the table holds already, and then acks them: the broker is freed
//! before any handler runs, and a message delivered twice is stored once.
//! Handling is a [`Relay`] over that table whose publisher is the
//! consumer's pipeline: claims with leases, per-key order (when the
//! consumer keeps a key order), backoff between tries of a message the
//! handler failed, crash-loop counts, wake-ups and the polling floor all
//! work as for outbox rows, and so do the CLI's and the console's failed
//! rows, requeue and purge. Each message runs through the same layers as a
//! delivery from the broker (decode, inbox mark, handler, its retries and
//! parking, after [`max_claims`](StoredInbox::max_claims) claims rather
//! than the consumer's deliveries); a parked message becomes a failed row
//! with the reason, to requeue once fixed.
//!
//! With an [`Inbox`](tidings_inbox::Inbox), the handler's writes and the
//! inbox mark commit together, so a message handled again after a crash
//! between that commit and the row's settlement is skipped as a duplicate:
//! each effect once. Without one, handlers must be idempotent.
//!
//! During a handler outage messages wait in the table rather than on the
//! broker, which redelivers nothing and parks nothing; and a long handler
//! holds a row's lease rather than a broker delivery or an SQS visibility
//! timeout.
//!
//! ```
//! use tidings_consumer::{Consumer, HandlerError, StoredInbox, TxHandle, handler_fn};
//! use tidings_core::memory::{MemoryBroker, MemoryContext, MemoryStore};
//! use tidings_core::{Message, QueueSpec};
//! use tidings_inbox::Inbox;
//!
//! static ORDERS: QueueSpec<u64> = QueueSpec::json("orders");
//!
//! async fn bill(msg: Message<u64>, tx: TxHandle<MemoryContext>) -> Result<(), HandlerError> {
//!     tx.lock().await.insert("invoices", msg.payload.to_string(), "billed");
//!     Ok(())
//! }
//!
//! let store = MemoryStore::new();
//! let broker = MemoryBroker::new();
//! broker.declare_queue("orders");
//! let consumer = Consumer::new(broker, &ORDERS, handler_fn(bill))
//!     .unwrap()
//!     .inbox(Inbox::new(store.clone(), "billing").unwrap())
//!     .stored(StoredInbox::new(store))
//!     .unwrap();
//! // LifecyclePlan::new().step("billing", consumer)
//! ```

mod handling;
mod receive;

use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use tidings_core::lifecycle::{Step, StepError};
use tidings_core::port::error_chain;
use tidings_core::relay::{Relay, RelayOptions};
use tidings_core::{
    Backoff, Codec, InboxAttempts, InboxStore, OrderingMode, RetryPolicy, Route, Source, SpecError,
    StageEvents, Wakeup, settings,
};
use tokio_util::sync::CancellationToken;

use crate::handler::Handler;
use crate::{Consumer, ConsumerOptions, KeyOrder};
use handling::Handling;
use receive::Intake;

/// Where a consumer keeps the messages it receives until it has handled
/// them, and how it handles them from there; see the
/// [module docs](self). A consumer takes it with
/// [`Consumer::stored`].
#[derive(Debug, Clone)]
pub struct StoredInbox<St> {
    store: St,
    wakeup: Wakeup,
    relay_options: Option<RelayOptions>,
    retry_backoff: Backoff,
    receive_batch: usize,
    max_claims: u32,
}

impl<St: StageEvents> StoredInbox<St> {
    /// Default [`receive_batch`](Self::receive_batch).
    pub const DEFAULT_RECEIVE_BATCH: usize = 256;
    /// Default [`max_claims`](Self::max_claims): with the default backoff,
    /// a message whose handler keeps failing is tried for about an hour.
    pub const DEFAULT_MAX_CLAIMS: u32 = 20;

    /// Keeps received messages in `store`.
    pub fn new(store: St) -> Self {
        Self {
            store,
            wakeup: Wakeup::new(),
            relay_options: None,
            retry_backoff: RetryPolicy::DEFAULT_BACKOFF,
            receive_batch: Self::DEFAULT_RECEIVE_BATCH,
            max_claims: Self::DEFAULT_MAX_CLAIMS,
        }
    }

    /// The store the messages are kept in.
    pub fn get_store(&self) -> &St {
        &self.store
    }
}

settings!(StoredInbox<St> {
    /// Wakes the handling side, besides the receiving side of this process
    /// waking it after each batch it stores: the store's wake-up source
    /// (a PostgreSQL listener, a MongoDB change stream, a log-tailing
    /// reader) for messages stored by other processes. Default: only this
    /// process's receiving, and the relay's polling floor.
    wakeup(wakeup: Wakeup), get_wakeup: &Wakeup;
    /// How the handling side claims: its claims, leases and polling floor.
    /// Default: claims of 256 rows, as many handled at once as the
    /// consumer's [`concurrency`](crate::ConsumerOptions::concurrency), and
    /// a lease outlasting every attempt of a claim's messages at the
    /// handler timeout.
    relay_options(options: RelayOptions) = Some(options),
        get_relay_options: Option<&RelayOptions> = as_ref();
    /// The wait before a message whose handler failed (after the
    /// consumer's in-process attempts) is handled again; default
    /// [`RetryPolicy::DEFAULT_BACKOFF`], 1 s doubling to 5 min.
    retry_backoff(retry_backoff: Backoff), get_retry_backoff: Backoff;
    /// The most deliveries stored in one transaction; at least 1, default
    /// [`DEFAULT_RECEIVE_BATCH`](StoredInbox::DEFAULT_RECEIVE_BATCH).
    receive_batch(receive_batch: usize) = receive_batch.max(1), get_receive_batch: usize;
    /// The claims of a message whose handler fails (each with the
    /// consumer's in-process [`attempts`](crate::ConsumerOptions::attempts))
    /// before it is parked, in place of the consumer's
    /// [`max_deliveries`](crate::ConsumerOptions::max_deliveries): a stored
    /// message waits out an outage in the table rather than being parked
    /// within seconds as broker redeliveries would. At least 1; default
    /// [`DEFAULT_MAX_CLAIMS`](StoredInbox::DEFAULT_MAX_CLAIMS).
    max_claims(max_claims: u32) = max_claims.max(1), get_max_claims: u32;
});

/// A consumer with a [`StoredInbox`]: receiving and handling run side by
/// side until cancelled. Built by [`Consumer::stored`]; runnable as a
/// lifecycle step.
pub struct StoredConsumer<S, T: 'static, C: 'static, H, I, St> {
    consumer: Consumer<S, T, C, H, I>,
    stored: StoredInbox<St>,
    route: Route,
}

impl<S, T, C, H, I: InboxStore> Consumer<S, T, C, H, I> {
    /// Stores what it receives in `stored` and handles it from there; see
    /// [`StoredInbox`].
    ///
    /// # Errors
    ///
    /// [`SpecError::EmptyName`], [`SpecError::NameTooLong`] or
    /// [`SpecError::IllegalName`] when the consumer's name cannot name a
    /// route of the store, which the stored messages are kept under.
    pub fn stored<St: StageEvents>(
        self,
        stored: StoredInbox<St>,
    ) -> Result<StoredConsumer<S, T, C, H, I, St>, SpecError> {
        let route = self.route_kept_with(stored.retry_backoff)?;
        Ok(StoredConsumer {
            consumer: self,
            stored,
            route,
        })
    }

    /// The route a stored inbox keeps this consumer's messages under, with
    /// the default [`retry_backoff`](StoredInbox::retry_backoff): what a
    /// log-tailing reader of the stored table must serve
    /// (`WalOptions::untyped_route` in `tidings-postgres`), known before
    /// the store that [`stored`](Self::stored) takes exists.
    ///
    /// # Errors
    ///
    /// As [`stored`](Self::stored).
    pub fn stored_route(&self) -> Result<Route, SpecError> {
        self.route_kept_with(RetryPolicy::DEFAULT_BACKOFF)
    }

    /// The route of the stored messages, retried with `backoff`.
    fn route_kept_with(&self, backoff: Backoff) -> Result<Route, SpecError> {
        let (_, queue, inbox, _) = self.parts();
        // Rows of a key are claimed one at a time where any type keeps
        // the order of its key.
        let ordered = (self.every_options().iter()).any(|o| o.key_order != KeyOrder::Unordered);
        let ordering = match ordered {
            true => OrderingMode::PerKey,
            false => OrderingMode::Unordered,
        };
        let route = Route {
            name: inbox.consumer().to_owned().into(),
            destination: Some(queue.name().to_owned().into()),
            ordering,
            // The consumer's pipeline parks a message past its deliveries.
            retry: RetryPolicy::new().max_attempts(u32::MAX).backoff(backoff),
            hlc_ordering: false,
        };
        route.validate()?;
        Ok(route)
    }
}

impl<S, T, C, H, I, St> StoredConsumer<S, T, C, H, I, St>
where
    S: Source,
    T: Send + 'static,
    C: Codec<T> + 'static,
    I: InboxAttempts,
    H: Handler<T, I::Tx>,
    St: StageEvents,
{
    /// Receives and handles until `cancel` fires.
    ///
    /// # Errors
    ///
    /// The store's error when the handling side cannot go on (the table is
    /// missing, the store is misconfigured); receiving stops with it.
    /// Failures of the broker or passing ones of the store are logged and
    /// retried.
    pub async fn run(&self, cancel: CancellationToken) -> Result<(), tidings_core::StoreError> {
        let stop = cancel.child_token();
        let (_, queue, _, options) = self.consumer.parts();
        let options = *options;
        // Past its claims, counted as handler starts, a message is parked;
        // a consumer that never parks keeps that.
        let attempts = (self.consumer.every_options().iter())
            .map(|o| o.attempts)
            .max()
            .unwrap_or(options.attempts);
        let starts = self.stored.max_claims.saturating_mul(attempts.max(1));
        let starts = options.max_deliveries.map(|_| starts);
        let pipeline = self
            .consumer
            .pipeline(&stop, options.max_deliveries(starts));
        let relay = Relay::for_route(
            self.stored.store.clone(),
            Handling { pipeline },
            self.route.clone(),
        )
        .map_err(|e| tidings_core::StoreError::Invalid(e.to_string()))?
        .options(self.relay_options(&options))
        .wakeup(self.stored.wakeup.clone());
        // A stored message the relay fails for good without the pipeline
        // parking it (a crash loop) gets the consumer's hook too.
        let relay = match self.consumer.give_up_hook() {
            Some(hook) => relay.give_up_hook(hook.clone()),
            None => relay,
        };
        let intake = Intake {
            store: &self.stored.store,
            route: &self.route.name,
            destination: queue.name(),
            wakeup: &self.stored.wakeup,
            batch: self.stored.receive_batch,
        };
        let receiving = self
            .consumer
            .subscribed(&stop, |stream| intake.receive(stream, &stop));
        let handling = async {
            let ended = relay.run(stop.clone()).await;
            if let Err(e) = &ended {
                tracing::error!(error = %error_chain(e), "handling stored messages stopped");
                stop.cancel();
            }
            ended
        };
        let ((), handled) = tokio::join!(receiving, handling);
        handled
    }

    /// What the consumer has done so far.
    pub fn report(&self) -> crate::ConsumerReport {
        self.consumer.report()
    }

    /// Rows the handling side claims at once by default: claims of 32 rows
    /// handled 8 at once reached half of today's path in `consume-stored`,
    /// wider ones all of it.
    const DEFAULT_CLAIM: usize = 256;

    /// The relay options of the handling side: as set, or sized to the
    /// consumer's concurrency and handler timeout.
    fn relay_options(&self, options: &ConsumerOptions) -> RelayOptions {
        if let Some(options) = self.stored.relay_options {
            return options;
        }
        // The longest a message may take, of any type.
        let longest = (self.consumer.every_options().iter())
            .map(|o| o.handler_timeout * o.attempts.max(o.strict_attempts).max(1))
            .max()
            .unwrap_or_default();
        // A claim's messages are handled a window at a time.
        let windows = Self::DEFAULT_CLAIM.div_ceil(options.concurrency);
        let windows = u32::try_from(windows).unwrap_or(u32::MAX);
        let lease = longest * windows + Duration::from_secs(30);
        RelayOptions::default()
            .batch_size(Self::DEFAULT_CLAIM)
            .publish_window(options.concurrency)
            .lease(lease.max(RelayOptions::DEFAULT_LEASE))
    }
}

impl<S, T, C, H, I, St> Step for StoredConsumer<S, T, C, H, I, St>
where
    S: Source,
    T: Send + 'static,
    C: Codec<T> + 'static,
    I: InboxAttempts,
    H: Handler<T, I::Tx>,
    St: StageEvents,
{
    fn run(&self, cancel: CancellationToken) -> BoxFuture<'_, Result<(), StepError>> {
        async move {
            StoredConsumer::run(self, cancel).await?;
            Ok(())
        }
        .boxed()
    }
}
