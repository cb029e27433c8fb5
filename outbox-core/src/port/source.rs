//! Receiving deliveries from a broker and settling them.

use std::future::Future;
use std::time::Duration;

use futures::Stream;

use super::BoxError;
use crate::Envelope;

/// The header a dead-lettered message carries its reason in, where the
/// transport can add one.
pub const DEAD_LETTER_REASON_HEADER: &str = "x-dead-letter-reason";

/// The header a dead letter replayed to its queue carries the reason it
/// was parked for in (its [`DEAD_LETTER_REASON_HEADER`]); the handler can
/// read it, and the copy starts with a fresh delivery count.
pub const REPLAYED_REASON_HEADER: &str = "x-tidings-replayed-reason";

/// The header a parked message carries the number of times it was
/// delivered before it was parked in, written by the acker that parks it.
/// A dead-letter reader shows this count, never one a broker keeps of its
/// own reads.
pub const PARKED_DELIVERIES_HEADER: &str = "x-tidings-parked-deliveries";

/// The header a parked message carries the time it was parked at in, as
/// milliseconds since the Unix epoch.
pub const PARKED_AT_HEADER: &str = "x-tidings-parked-at";

/// The header a message carries the time of its first failed delivery in,
/// as milliseconds since the Unix epoch: set on the first delayed retry and
/// kept by every later one, so a dead letter tells how long it failed for.
pub const FIRST_FAILURE_HEADER: &str = "x-tidings-first-failure";

/// The header a message carries the number of deliveries it had in, where
/// a transport republishes it for a delayed redelivery (through a delay
/// queue or a retry topic), so its delivery count stays exact.
pub const PRIOR_DELIVERIES_HEADER: &str = "x-tidings-prior-deliveries";

/// Opens streams of deliveries from a queue.
///
/// A stream ends or yields an error when the connection drops; the consumer
/// runner subscribes again with backoff, and the broker redelivers what was
/// left unsettled. Messages whose attributes do not form an envelope are
/// dead-lettered by the source itself and never yielded.
pub trait Source: Clone + Send + Sync + 'static {
    /// Settles one delivery.
    type Acker: Acker;
    /// The stream of deliveries.
    type Stream: Stream<Item = Result<Delivery<Self::Acker>, SourceError>> + Send + Unpin + 'static;

    /// Starts consuming `queue`.
    ///
    /// # Errors
    ///
    /// [`SourceError::NotFound`] when `queue` does not exist;
    /// [`SourceError::Unavailable`] when the broker cannot be reached;
    /// [`SourceError::Transport`] for any other broker failure.
    fn subscribe(
        &self,
        queue: &str,
    ) -> impl Future<Output = Result<Self::Stream, SourceError>> + Send;

    /// The broker, as the OpenTelemetry conventions' `messaging.system`
    /// names it (`rabbitmq`, `aws_sqs`, `kafka`), for the consumer's
    /// spans. Defaults to [`UNKNOWN_SYSTEM`](crate::telemetry::UNKNOWN_SYSTEM).
    fn messaging_system(&self) -> &'static str {
        crate::telemetry::UNKNOWN_SYSTEM
    }
}

/// When a nacked delivery comes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Redelivery {
    /// As soon as the broker can.
    Now,
    /// Not before this delay.
    After(Duration),
}

/// Settles one delivery. Every method consumes the acker, so nothing is
/// settled twice.
pub trait Acker: Send + 'static {
    /// Removes the message from the queue.
    ///
    /// # Errors
    ///
    /// [`AckError::Unavailable`] when the channel or connection is gone;
    /// [`AckError::Expired`] when the broker no longer knows the delivery;
    /// [`AckError::Transport`] for any other broker failure. The broker then
    /// redelivers the message.
    fn ack(self) -> impl Future<Output = Result<(), AckError>> + Send;

    /// Returns the message for redelivery.
    ///
    /// # Errors
    ///
    /// [`AckError::Unavailable`] when the channel or connection is gone;
    /// [`AckError::Expired`] when the broker no longer knows the delivery;
    /// [`AckError::Transport`] for any other broker failure. The broker then
    /// redelivers the message as it would have.
    fn nack(self, redelivery: Redelivery) -> impl Future<Output = Result<(), AckError>> + Send;

    /// Moves the message to the queue's dead-letter queue with a reason.
    ///
    /// # Errors
    ///
    /// [`AckError::Unavailable`] when the channel or connection is gone;
    /// [`AckError::Expired`] when the broker no longer knows the delivery;
    /// [`AckError::Unsupported`] when the transport has no dead-letter queue
    /// for it; [`AckError::Transport`] for any other broker failure, such as a
    /// dead-letter queue that refuses the message.
    fn dead_letter(self, reason: String) -> impl Future<Output = Result<(), AckError>> + Send;
}

/// A message received from a queue, with the means to settle it.
#[derive(Debug)]
pub struct Delivery<A> {
    envelope: Envelope,
    delivery_count: Option<u32>,
    acker: A,
}

impl<A: Acker> Delivery<A> {
    /// A delivery; `delivery_count` is 1 on first delivery, `None` where the
    /// broker does not know.
    pub fn new(envelope: Envelope, delivery_count: Option<u32>, acker: A) -> Self {
        Self {
            envelope,
            delivery_count,
            acker,
        }
    }

    /// The envelope.
    pub fn envelope(&self) -> &Envelope {
        &self.envelope
    }

    /// How many times this message was delivered, this time included.
    pub fn delivery_count(&self) -> Option<u32> {
        self.delivery_count
    }

    /// Splits into the envelope, the delivery count and the acker.
    pub fn into_parts(self) -> (Envelope, Option<u32>, A) {
        (self.envelope, self.delivery_count, self.acker)
    }

    /// Acks the delivery.
    ///
    /// # Errors
    ///
    /// The acker's [`AckError`]: [`AckError::Unavailable`] when the channel or
    /// connection is gone, [`AckError::Expired`] when the broker no longer
    /// knows the delivery, [`AckError::Transport`] for any other broker
    /// failure.
    pub async fn ack(self) -> Result<(), AckError> {
        self.acker.ack().await
    }

    /// Nacks the delivery for redelivery.
    ///
    /// # Errors
    ///
    /// The acker's [`AckError`]: [`AckError::Unavailable`] when the channel or
    /// connection is gone, [`AckError::Expired`] when the broker no longer
    /// knows the delivery, [`AckError::Transport`] for any other broker
    /// failure.
    pub async fn nack(self, redelivery: Redelivery) -> Result<(), AckError> {
        self.acker.nack(redelivery).await
    }

    /// Dead-letters the delivery.
    ///
    /// # Errors
    ///
    /// The acker's [`AckError`]: [`AckError::Unavailable`] when the channel or
    /// connection is gone, [`AckError::Expired`] when the broker no longer
    /// knows the delivery, [`AckError::Unsupported`] when the transport has no
    /// dead-letter queue for it, [`AckError::Transport`] for any other broker
    /// failure.
    pub async fn dead_letter(self, reason: impl Into<String>) -> Result<(), AckError> {
        self.acker.dead_letter(reason.into()).await
    }
}

/// Consuming failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// The broker could not be reached or the connection dropped.
    #[error("broker unavailable")]
    Unavailable(#[source] BoxError),
    /// The queue does not exist.
    #[error("queue {queue:?} does not exist")]
    NotFound {
        /// The queue.
        queue: String,
    },
    /// Any other transport failure.
    #[error("consuming failed")]
    Transport(#[source] BoxError),
}

impl SourceError {
    /// Whether subscribing again later may succeed.
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Unavailable(_) | Self::Transport(_))
    }
}

/// Settling a delivery failed. The broker redelivers the message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AckError {
    /// The channel or connection is gone; the broker will redeliver.
    #[error("cannot settle: broker unavailable")]
    Unavailable(#[source] BoxError),
    /// The delivery is no longer known to the broker (for example its
    /// visibility timeout ran out or the channel was closed).
    #[error("delivery is no longer settleable")]
    Expired,
    /// The settlement is not supported by this transport.
    #[error("unsupported settlement: {0}")]
    Unsupported(&'static str),
    /// Any other transport failure.
    #[error("settling failed")]
    Transport(#[source] BoxError),
}

impl AckError {
    /// Whether trying again may succeed.
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Unavailable(_) | Self::Transport(_))
    }
}
