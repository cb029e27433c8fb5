//! How a consumer runs.

use std::time::Duration;

use tidings_core::{Backoff, IsolationLevel};

use crate::{Expired, KeyOrder};

/// Settings of a consumer: a consuming setter named after each setting,
/// and `get_*` to read one back.
///
/// ```
/// use std::time::Duration;
/// use tidings_consumer::ConsumerOptions;
///
/// let options = ConsumerOptions::default()
///     .concurrency(4)
///     .max_deliveries(None)
///     .handler_timeout(Duration::from_secs(5));
/// assert_eq!(options.get_concurrency(), 4);
/// assert_eq!(options.get_max_deliveries(), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConsumerOptions {
    pub(crate) concurrency: usize,
    pub(crate) max_batch: usize,
    pub(crate) key_order: KeyOrder,
    pub(crate) max_deliveries: Option<u32>,
    pub(crate) attempts: u32,
    pub(crate) strict_attempts: u32,
    pub(crate) retry_backoff: Backoff,
    pub(crate) classify_errors: bool,
    pub(crate) handler_timeout: Duration,
    pub(crate) redelivery_delay: Option<Duration>,
    pub(crate) restart_backoff: Backoff,
    pub(crate) shutdown_timeout: Duration,
    pub(crate) expired: Expired,
    pub(crate) isolation: Option<IsolationLevel>,
}

impl ConsumerOptions {
    /// Default [`concurrency`](Self::concurrency).
    pub const DEFAULT_CONCURRENCY: usize = 8;
    /// Default [`attempts`](Self::attempts).
    pub const DEFAULT_ATTEMPTS: u32 = 3;
    /// Default [`max_deliveries`](Self::max_deliveries): five deliveries
    /// of [`DEFAULT_ATTEMPTS`](Self::DEFAULT_ATTEMPTS) tries each, fifteen
    /// handler runs spread over the redeliveries, outlast a dependency's
    /// brief outage yet stop a message that can never succeed within
    /// seconds to minutes.
    pub const DEFAULT_MAX_DELIVERIES: u32 = 5;
    /// Default [`strict_attempts`](Self::strict_attempts).
    pub const DEFAULT_STRICT_ATTEMPTS: u32 = 10;
    /// Default [`retry_backoff`](Self::retry_backoff).
    pub const DEFAULT_RETRY_BACKOFF: Backoff =
        Backoff::new(Duration::from_millis(100), Duration::from_secs(2));
    /// Default [`handler_timeout`](Self::handler_timeout).
    pub const DEFAULT_HANDLER_TIMEOUT: Duration = Duration::from_secs(30);
    /// Default [`restart_backoff`](Self::restart_backoff).
    pub const DEFAULT_RESTART_BACKOFF: Backoff =
        Backoff::new(Duration::from_millis(500), Duration::from_secs(30));
    /// Default [`shutdown_timeout`](Self::shutdown_timeout).
    pub const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);
    /// With an inbox, a delivery the broker counts more than this many
    /// times [`max_deliveries`](Self::max_deliveries) is dead-lettered even
    /// if the inbox counted fewer attempts: a backstop, far above what
    /// crashes of neighbours add (at most `max_deliveries + 1` per message
    /// that crashes the process, for each delivery prefetched behind it).
    pub const BROKER_COUNT_BACKSTOP: u32 = 10;
}

tidings_core::settings!(ConsumerOptions {
    /// Deliveries, or batches of them, handled at once.
    ///
    /// At least 1; default [`DEFAULT_CONCURRENCY`](Self::DEFAULT_CONCURRENCY).
    concurrency(concurrency: usize) = concurrency.max(1), get_concurrency: usize;
    /// Deliveries at most that share one inbox transaction (at least 1,
    /// the default). Deliveries already waiting when a handler slot frees
    /// up are marked and handled one after another in one transaction,
    /// committed once, then acked; nothing waits for a batch to fill. If a
    /// handler in the batch fails, or the commit does, the transaction is
    /// rolled back and each delivery runs again in its own, with the usual
    /// retries, so the database sees every effect once. Handlers with
    /// effects outside the transaction may see them repeated, as with any
    /// redelivery. The source's prefetch should cover
    /// `concurrency × max_batch` for batches to fill.
    ///
    /// At least 1.
    max_batch(max: usize) = max.max(1), get_max_batch: usize;
    /// How deliveries sharing an ordering key are ordered, and what a
    /// failing one does to its key ([`KeyOrder::Serial`] by default).
    key_order(order: KeyOrder), get_key_order: KeyOrder;
    /// How many times a message's handler may start without committing
    /// before the message is dead-lettered without running it again.
    ///
    /// With an inbox, the attempts counted are those the inbox store saw
    /// start, so a message whose handler never ran (prefetched by a
    /// consumer process that died) is never parked for its neighbour's
    /// crash. A first delivery is not counted up front, so that the happy
    /// path pays nothing; if its process dies the message may run once more
    /// than this. The broker's delivery count parks only past
    /// [`BROKER_COUNT_BACKSTOP`](Self::BROKER_COUNT_BACKSTOP) times this.
    ///
    /// Without an inbox, the broker's delivery count is held against this.
    ///
    /// [`DEFAULT_MAX_DELIVERIES`](Self::DEFAULT_MAX_DELIVERIES) by
    /// default, so a poison message stops by itself even on a queue whose
    /// broker counts deliveries loosely. `None` counts nothing and leaves
    /// parking to the broker's own redrive policy.
    max_deliveries(max: impl Into<Option<u32>>) = max.into(), get_max_deliveries: Option<u32>;
    /// Handler attempts per delivery before it is nacked (at least 1);
    /// under [`KeyOrder::Strict`] a delivery with an ordering key gets
    /// [`strict_attempts`](Self::strict_attempts) instead and is never
    /// nacked.
    ///
    /// At least 1; default [`DEFAULT_ATTEMPTS`](Self::DEFAULT_ATTEMPTS).
    attempts(attempts: u32) = attempts.max(1), get_attempts: u32;
    /// Whether failures a handler returns through `?` without saying their
    /// kind are read by the inbox store ([`InboxStore::is_permanent`]), so
    /// those that can never succeed on retry are dead-lettered at once
    /// instead of redelivered: on PostgreSQL constraint violations and data
    /// errors (SQLSTATE classes 23 and 22), on MongoDB duplicate keys and
    /// failed document validation. On by default; off, they are all
    /// transient. Failures made with [`HandlerError::transient`] or
    /// [`HandlerError::permanent`] keep their kind either way.
    ///
    /// [`InboxStore::is_permanent`]: tidings_core::InboxStore::is_permanent
    /// [`HandlerError::transient`]: crate::HandlerError::transient
    /// [`HandlerError::permanent`]: crate::HandlerError::permanent
    classify_errors(classify: bool), get_classify_errors: bool;
    /// Under [`KeyOrder::Strict`], handler attempts in all for a delivery
    /// that holds its key before it is dead-lettered (at least 1). With
    /// the default backoff, 10 attempts hold a key for at most about 13 s
    /// of waits plus the handler runs.
    ///
    /// At least 1; default [`DEFAULT_STRICT_ATTEMPTS`](Self::DEFAULT_STRICT_ATTEMPTS).
    strict_attempts(attempts: u32) = attempts.max(1), get_strict_attempts: u32;
    /// Waits between those attempts (and between strict attempts); default
    /// [`DEFAULT_RETRY_BACKOFF`](Self::DEFAULT_RETRY_BACKOFF).
    retry_backoff(backoff: Backoff), get_retry_backoff: Backoff;
    /// How long a handler may run; a timeout counts as a transient failure.
    /// Default [`DEFAULT_HANDLER_TIMEOUT`](Self::DEFAULT_HANDLER_TIMEOUT).
    handler_timeout(timeout: Duration), get_handler_timeout: Duration;
    /// How long a nacked delivery stays away; `None`, the default,
    /// redelivers at once.
    redelivery_delay(delay: impl Into<Option<Duration>>) = delay.into(),
        get_redelivery_delay: Option<Duration>;
    /// Waits before subscribing again after the source fails; default
    /// [`DEFAULT_RESTART_BACKOFF`](Self::DEFAULT_RESTART_BACKOFF).
    restart_backoff(backoff: Backoff), get_restart_backoff: Backoff;
    /// How long running handlers get to finish on shutdown; the rest are
    /// left unsettled for redelivery, as is a delivery waiting to be
    /// retried. Default
    /// [`DEFAULT_SHUTDOWN_TIMEOUT`](Self::DEFAULT_SHUTDOWN_TIMEOUT).
    shutdown_timeout(timeout: Duration), get_shutdown_timeout: Duration;
    /// What to do with a delivery whose expiry has passed when it arrives:
    /// [`Expired::Park`] (the default) dead-letters it with the reason,
    /// [`Expired::Skip`] acks it. The handler never runs on it either way.
    expired(expired: Expired), get_expired: Expired;
    /// The isolation level of the handler's transaction; `None`, the
    /// default, keeps the inbox store's own. A consumer asking for a level
    /// its store does not offer refuses to start
    /// ([`InboxStore::offers_isolation`]). Under
    /// [`IsolationLevel::Serializable`] a transaction that loses a
    /// conflict fails with a serialization failure, a transient error the
    /// consumer retries.
    ///
    /// [`InboxStore::offers_isolation`]: tidings_core::InboxStore::offers_isolation
    isolation(level: impl Into<Option<IsolationLevel>>) = level.into(),
        get_isolation: Option<IsolationLevel>;
});

impl Default for ConsumerOptions {
    fn default() -> Self {
        Self {
            concurrency: Self::DEFAULT_CONCURRENCY,
            max_batch: 1,
            key_order: KeyOrder::default(),
            max_deliveries: Some(Self::DEFAULT_MAX_DELIVERIES),
            attempts: Self::DEFAULT_ATTEMPTS,
            strict_attempts: Self::DEFAULT_STRICT_ATTEMPTS,
            classify_errors: true,
            retry_backoff: Self::DEFAULT_RETRY_BACKOFF,
            handler_timeout: Self::DEFAULT_HANDLER_TIMEOUT,
            redelivery_delay: None,
            restart_backoff: Self::DEFAULT_RESTART_BACKOFF,
            shutdown_timeout: Self::DEFAULT_SHUTDOWN_TIMEOUT,
            expired: Expired::Park,
            isolation: None,
        }
    }
}
