//! How a queue is declared: its type, consumers, limits and dead-letter
//! queue, checked before anything is sent and mapped to `x-` arguments in
//! [`arguments`].

pub(crate) mod arguments;
mod dead_letter;
mod kind;
mod limits;
mod rules;

use std::time::Duration;

use tidings_core::settings;

pub use dead_letter::DeadLetterOptions;
pub use kind::{Overflow, QueueKind};
pub use rules::QueueOptionsError;

use limits::Limits;

/// How [`Topology`](crate::Topology) declares a queue.
///
/// Every setting left at its default sends no argument, so the broker's
/// (or its policies') defaults apply. [`check`](Self::check) refuses
/// combinations the broker would refuse or silently ignore, and
/// [`Topology::declare_queue`](crate::Topology::declare_queue) runs it
/// before talking to the broker.
///
/// ```
/// use tidings_rabbitmq::{Overflow, QueueOptions};
///
/// // Per-key order across replicas: one consumer at a time gets the
/// // queue; a message delivered 20 times is dead-lettered by the broker.
/// let options = QueueOptions::quorum()
///     .single_active_consumer(true)
///     .delivery_limit(20)
///     .max_length(1_000_000)
///     .overflow(Overflow::RejectPublish);
/// assert!(options.check().is_ok());
///
/// // A classic queue counts no deliveries.
/// assert!(QueueOptions::classic().delivery_limit(20).check().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueueOptions {
    kind: QueueKind,
    expires: Option<Duration>,
    single_active_consumer: bool,
    delivery_limit: Option<u32>,
    limits: Limits,
    dead_letter: DeadLetterOptions,
}

impl QueueOptions {
    /// A classic queue.
    pub fn classic() -> Self {
        Self::default()
    }

    /// A quorum queue.
    pub fn quorum() -> Self {
        Self::default().kind(QueueKind::Quorum)
    }

    /// A stream.
    pub fn stream() -> Self {
        Self::default().kind(QueueKind::Stream)
    }
}

settings!(QueueOptions {
    /// The queue type (`x-queue-type`); default [`QueueKind::Classic`].
    kind(kind: QueueKind), get_kind: QueueKind;
    /// Lets the broker delete the queues after they have gone unused (no
    /// consumer, no redeclaration) this long (`x-expires`), and makes the
    /// exchanges auto-delete with their last binding. Meant for tests and
    /// throwaway queues; default: never. Not on a stream. The delay queue
    /// counts as unused even while messages wait in it, so keep this well
    /// above the longest redelivery delay.
    expires(after: Duration) = Some(after), get_expires: Option<Duration>;
    /// Whether the broker delivers to one consumer of the queue at a time
    /// (`x-single-active-consumer`); default `false`. The others wait,
    /// subscribed, and the next takes over, in queue order, when the
    /// active one goes away: with the consumer's strict key order this
    /// keeps each key's order across any number of consumer replicas.
    /// Classic and quorum queues.
    single_active_consumer(single: bool), get_single_active_consumer: bool;
    /// How many times the broker delivers a message again before it
    /// dead-letters it instead (`x-delivery-limit`): with 2, a message is
    /// delivered at most 3 times; default: no limit. Quorum queues only. The consumer's own `max_deliveries`
    /// parks a message with a reason before this, so set this above it,
    /// as a backstop for consumers that die on the message.
    delivery_limit(deliveries: u32) = Some(deliveries), get_delivery_limit: Option<u32>;
    /// How the dead-letter queue `q.dlq` is declared; default
    /// [`DeadLetterOptions::default`]: the queue's own type, no limits.
    dead_letter(options: DeadLetterOptions), get_dead_letter: DeadLetterOptions;
    /// At most this many ready messages in the queue (`x-max-length`);
    /// default: no limit. Not on a stream.
    limits.max_length(messages: u64) = Some(messages), get_max_length: Option<u64>;
    /// At most this many bytes of ready message bodies in the queue
    /// (`x-max-length-bytes`); default: no limit. On a stream, the size
    /// past which its oldest segments are discarded.
    limits.max_length_bytes(bytes: u64) = Some(bytes), get_max_length_bytes: Option<u64>;
    /// What a full queue does with a new message (`x-overflow`); default:
    /// not set, which the broker takes as [`Overflow::DropHead`]. Needs
    /// [`max_length`](Self::max_length) or
    /// [`max_length_bytes`](Self::max_length_bytes); not on a stream;
    /// [`Overflow::RejectPublishDlx`] on classic queues only.
    limits.overflow(overflow: Overflow) = Some(overflow), get_overflow: Option<Overflow>;
});

impl From<QueueKind> for QueueOptions {
    fn from(kind: QueueKind) -> Self {
        Self::default().kind(kind)
    }
}
