//! How the dead-letter queue of a queue is declared.

use tidings_core::settings;

use super::kind::{Overflow, QueueKind};
use super::limits::Limits;

/// How [`Topology`](crate::Topology) declares the dead-letter queue `q.dlq`
/// of a queue `q`.
///
/// ```
/// use tidings_rabbitmq::{DeadLetterOptions, Overflow, QueueKind, QueueOptions};
///
/// let options = QueueOptions::quorum().dead_letter(
///     DeadLetterOptions::default()
///         .kind(QueueKind::Classic)
///         .max_length(100_000)
///         .overflow(Overflow::RejectPublish),
/// );
/// assert_eq!(options.get_dead_letter().get_max_length(), Some(100_000));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DeadLetterOptions {
    pub(crate) kind: Option<QueueKind>,
    pub(crate) limits: Limits,
}

impl DeadLetterOptions {
    /// The dead-letter queue's type. Default: the queue's own type, or
    /// [`QueueKind::Classic`] for a stream. A stream is allowed here too,
    /// for an audit log of what was parked.
    pub fn kind(mut self, kind: QueueKind) -> Self {
        self.kind = Some(kind);
        self
    }

    /// The [`kind`](Self::kind) setting, `None` for the queue's own.
    pub fn get_kind(&self) -> Option<QueueKind> {
        self.kind
    }

    /// The type the dead-letter queue of a `queue_kind` queue is declared
    /// with.
    pub(crate) fn kind_for(&self, queue_kind: QueueKind) -> QueueKind {
        match (self.kind, queue_kind) {
            (Some(kind), _) => kind,
            (None, QueueKind::Stream) => QueueKind::Classic,
            (None, kind) => kind,
        }
    }
}

settings!(DeadLetterOptions {
    /// At most this many messages in the dead-letter queue
    /// (`x-max-length`); default: no limit. Not on a stream.
    limits.max_length(messages: u64) = Some(messages), get_max_length: Option<u64>;
    /// At most this many bytes of message bodies in the dead-letter queue
    /// (`x-max-length-bytes`); default: no limit.
    limits.max_length_bytes(bytes: u64) = Some(bytes), get_max_length_bytes: Option<u64>;
    /// What happens to a dead letter arriving at a full dead-letter queue
    /// (`x-overflow`); default: not set, which the broker takes as
    /// [`Overflow::DropHead`]. The dead-letter queue has no dead-letter
    /// exchange of its own, so [`Overflow::RejectPublishDlx`] is refused.
    limits.overflow(overflow: Overflow) = Some(overflow), get_overflow: Option<Overflow>;
});
