//! The queue types and overflow behaviours a queue can be declared with.

use std::fmt;

/// The type of a declared queue (`x-queue-type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum QueueKind {
    /// A classic queue. Delivery counts are approximate: 1 on first
    /// delivery, 2 once the broker flags a redelivery, plus the times the
    /// message was rejected into the dead-letter exchange (`x-death`) and
    /// the deliveries carried across delayed redeliveries.
    #[default]
    Classic,
    /// A quorum queue (replicated, `x-queue-type = quorum`). The broker
    /// counts deliveries in `x-delivery-count`, so delivery counts are
    /// exact.
    Quorum,
    /// A stream (`x-queue-type = stream`, RabbitMQ 3.9 and later): an
    /// append-only log that consuming does not empty. Consumers start at
    /// [`SourceOptions::stream_offset`](crate::SourceOptions::stream_offset);
    /// acks only make room in the prefetch, and a nack with requeue does
    /// not deliver the message again, so retry in process (the consumer's
    /// strict key order) or with a delayed redelivery, which appends it to
    /// the stream again. The broker never dead-letters from a stream;
    /// tidings' own dead-lettering (a republish to `q.dlx`) works as on the
    /// other kinds.
    Stream,
}

impl QueueKind {
    /// The value of `x-queue-type`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Classic => "classic",
            Self::Quorum => "quorum",
            Self::Stream => "stream",
        }
    }
}

impl fmt::Display for QueueKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the broker does with a message published to a queue that is at
/// its [`max_length`](crate::QueueOptions::max_length) or
/// [`max_length_bytes`](crate::QueueOptions::max_length_bytes)
/// (`x-overflow`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Overflow {
    /// Drops (or dead-letters) the oldest messages to make room: the
    /// broker's default.
    #[default]
    DropHead,
    /// Refuses the new message: its publisher gets a negative confirm, so
    /// the relay keeps the row and tries again later.
    RejectPublish,
    /// Refuses the new message and dead-letters it. Classic queues only,
    /// and only with a dead-letter exchange.
    RejectPublishDlx,
}

impl Overflow {
    /// The value of `x-overflow`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::DropHead => "drop-head",
            Self::RejectPublish => "reject-publish",
            Self::RejectPublishDlx => "reject-publish-dlx",
        }
    }
}

impl fmt::Display for Overflow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
