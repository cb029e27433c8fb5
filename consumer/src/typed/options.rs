//! What an event type changes of its consumer's options.

use std::time::Duration;

use tidings_core::{Backoff, IsolationLevel};

use crate::{ConsumerOptions, KeyOrder};

/// The settings one event type of an [`EventHandlers`](crate::EventHandlers)
/// set changes for its own messages; what it leaves unset is the
/// consumer's ([`ConsumerOptions`]). A consumer-wide setting (concurrency,
/// batching, `max_deliveries`, shutdown) cannot be changed per type.
///
/// ```
/// use std::time::Duration;
/// use tidings_consumer::{ConsumerOptions, KeyOrder, TypeOptions};
/// use tidings_core::IsolationLevel;
///
/// let refunds = TypeOptions::default()
///     .handler_timeout(Duration::from_secs(120))
///     .isolation(IsolationLevel::Serializable)
///     .key_order(KeyOrder::Strict);
/// assert_eq!(refunds.get_attempts(), None);
/// let applied = refunds.apply(ConsumerOptions::default().attempts(5));
/// assert_eq!(applied.get_attempts(), 5);
/// assert_eq!(applied.get_handler_timeout(), Duration::from_secs(120));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TypeOptions {
    handler_timeout: Option<Duration>,
    attempts: Option<u32>,
    strict_attempts: Option<u32>,
    retry_backoff: Option<Backoff>,
    key_order: Option<KeyOrder>,
    isolation: Option<IsolationLevel>,
}

tidings_core::settings!(TypeOptions {
    /// How long this type's handler may run
    /// ([`ConsumerOptions::handler_timeout`]).
    handler_timeout(timeout: Duration) = Some(timeout), get_handler_timeout: Option<Duration>;
    /// Handler attempts per delivery before it is nacked, at least 1
    /// ([`ConsumerOptions::attempts`]).
    attempts(attempts: u32) = Some(attempts.max(1)), get_attempts: Option<u32>;
    /// Attempts of a delivery holding its key under [`KeyOrder::Strict`],
    /// at least 1 ([`ConsumerOptions::strict_attempts`]).
    strict_attempts(attempts: u32) = Some(attempts.max(1)), get_strict_attempts: Option<u32>;
    /// Waits between attempts ([`ConsumerOptions::retry_backoff`]).
    retry_backoff(backoff: Backoff) = Some(backoff), get_retry_backoff: Option<Backoff>;
    /// How this type's deliveries sharing an ordering key are ordered
    /// ([`ConsumerOptions::key_order`]). Deliveries of ordered types
    /// hold their key while they run, and wait behind whichever of them
    /// holds it, whatever its type; one of a [`KeyOrder::Unordered`] type
    /// neither waits nor holds its key.
    key_order(order: KeyOrder) = Some(order), get_key_order: Option<KeyOrder>;
    /// The isolation level of this type's handler transactions
    /// ([`ConsumerOptions::isolation`]). Its deliveries share a batch's
    /// transaction only with deliveries of the same level.
    isolation(level: IsolationLevel) = Some(level), get_isolation: Option<IsolationLevel>;
});

impl TypeOptions {
    /// `options` with this type's settings in place of the consumer's.
    pub fn apply(&self, options: ConsumerOptions) -> ConsumerOptions {
        let o = options;
        o.handler_timeout(self.handler_timeout.unwrap_or(o.get_handler_timeout()))
            .attempts(self.attempts.unwrap_or(o.get_attempts()))
            .strict_attempts(self.strict_attempts.unwrap_or(o.get_strict_attempts()))
            .retry_backoff(self.retry_backoff.unwrap_or(o.get_retry_backoff()))
            .key_order(self.key_order.unwrap_or(o.get_key_order()))
            .isolation(self.isolation.or(o.get_isolation()))
    }
}

/// What a consumer with per-type handlers does with a message of a type
/// it has no handler for.
///
/// ```
/// use tidings_consumer::{EventHandlers, UnknownType};
/// use tidings_core::memory::MemoryContext;
///
/// let handlers = EventHandlers::<MemoryContext>::new().unknown(UnknownType::Skip);
/// assert_eq!(handlers.get_unknown(), UnknownType::Skip);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum UnknownType {
    /// Dead-letter it with the reason `no handler for event type "…"`,
    /// where an operator sees it and can replay it once a handler exists.
    /// The default: nothing is dropped silently.
    #[default]
    Park,
    /// Ack it, logged at `info`, for queues that carry types this consumer
    /// does not care about.
    Skip,
}
