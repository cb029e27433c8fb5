//! Sending envelopes to a broker.

use std::future::Future;

use super::{BoxError, PublishBatch};
use crate::Envelope;

/// Sends envelopes to their destination.
///
/// `Ok` means the broker has accepted the message (a publisher confirm, a
/// successful API response), never merely that it was written to a socket.
///
/// A publisher implements two methods: [`send`](Self::send), which
/// publishes a [`PublishBatch`], and [`messaging_system`](Self::messaging_system).
/// Everything else is built on them ([`PublisherExt`]), so a wrapper (one
/// that injects faults, adds headers or counts) written the obvious way,
/// forwarding both, keeps whatever its inner publisher does: batching, and
/// the relay's pipelining through the batch's [`Queued`](super::Queued)
/// token.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
///
/// use tidings_core::memory::MemoryBroker;
/// use tidings_core::{PublishBatch, PublishError, Publisher};
///
/// /// Counts what passes through, and changes nothing else.
/// #[derive(Clone)]
/// struct Counting<P> {
///     inner: P,
///     sent: Arc<AtomicUsize>,
/// }
///
/// impl<P: Publisher> Publisher for Counting<P> {
///     async fn send(&self, batch: PublishBatch<'_>) -> Vec<Result<(), PublishError>> {
///         self.sent.fetch_add(batch.envelopes().len(), Ordering::Relaxed);
///         self.inner.send(batch).await
///     }
///
///     fn messaging_system(&self) -> &'static str {
///         self.inner.messaging_system()
///     }
/// }
/// # let _ = Counting { inner: MemoryBroker::new(), sent: Arc::default() };
/// ```
pub trait Publisher: Clone + Send + Sync + 'static {
    /// Publishes a batch; one result per envelope, in order. One failure
    /// fails only its own envelope.
    ///
    /// The batch's [`Queued`](super::Queued) token, if it has one, is
    /// dropped once every message of it is queued on its way to the broker
    /// in batch order, ahead of anything published later: from then on the
    /// relay may publish its next batch while this one awaits its answers.
    /// A publisher that cannot say so sooner leaves the token in the batch,
    /// and it is dropped when `send` returns, which is always right.
    fn send(
        &self,
        batch: PublishBatch<'_>,
    ) -> impl Future<Output = Vec<Result<(), PublishError>>> + Send;

    /// The broker, as the OpenTelemetry conventions' `messaging.system`
    /// names it (`rabbitmq`, `aws_sqs`, `kafka`), for the relay's spans; a
    /// wrapper returns its inner publisher's.
    fn messaging_system(&self) -> &'static str;

    /// Whether the publisher decides what becomes of an expired event
    /// itself, so the relay hands it over instead of failing it: a
    /// consumer handling a stored inbox does, parking or skipping it as
    /// its options say. False by default; a wrapper returns its inner
    /// publisher's.
    fn judges_expiry(&self) -> bool {
        false
    }
}

/// Publishing one envelope or a plain batch, for every [`Publisher`].
///
/// Implemented for all publishers and not meant to be implemented by hand:
/// both methods go through [`Publisher::send`].
pub trait PublisherExt: Publisher {
    /// Publishes one envelope to `envelope.destination`.
    ///
    /// # Errors
    ///
    /// The [`PublishError`] the publisher reports for the envelope (see its
    /// variants; [`is_transient`](PublishError::is_transient) tells whether a
    /// later attempt may succeed); [`PublishError::Invalid`] when the publisher
    /// answers with no result.
    fn publish(
        &self,
        envelope: &Envelope,
    ) -> impl Future<Output = Result<(), PublishError>> + Send {
        async move {
            let mut results = self
                .send(PublishBatch::new(std::slice::from_ref(envelope)))
                .await;
            results.pop().unwrap_or(Err(PublishError::Invalid {
                reason: "the publisher answered an envelope with no result".into(),
            }))
        }
    }

    /// Publishes a batch nobody waits on to be queued; one result per
    /// envelope, in order.
    fn publish_batch(
        &self,
        envelopes: &[Envelope],
    ) -> impl Future<Output = Vec<Result<(), PublishError>>> + Send {
        self.send(PublishBatch::new(envelopes))
    }
}

impl<P: Publisher> PublisherExt for P {}

/// Logs one publish's outcome the way every transport does: `debug` when
/// accepted, `info` with the error and its class when not. Returns the
/// outcome unchanged.
///
/// # Errors
///
/// Returns `outcome` unchanged, so its error when it holds one.
pub fn trace_outcome(
    envelope: &Envelope,
    outcome: Result<(), PublishError>,
) -> Result<(), PublishError> {
    match &outcome {
        Ok(()) => tracing::debug!(
            messaging.destination.name = %envelope.destination,
            messaging.message.id = %envelope.event_id,
            "published"
        ),
        Err(error) => tracing::info!(
            messaging.destination.name = %envelope.destination,
            messaging.message.id = %envelope.event_id,
            transient = error.is_transient(),
            error = %error,
            "publish failed"
        ),
    }
    outcome
}

/// A publish that failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PublishError {
    /// The broker could not be reached or the connection dropped.
    #[error("broker unavailable")]
    Unavailable(#[source] BoxError),
    /// No confirmation arrived in time; the message may or may not have
    /// been accepted.
    #[error("publish was not confirmed in time")]
    Timeout,
    /// The broker refused the message for now (a negative confirm, a
    /// throttle).
    #[error("broker refused the message: {reason}")]
    Refused {
        /// What the broker said.
        reason: String,
    },
    /// The destination does not exist or routes nowhere; retrying cannot
    /// help until the topology changes.
    #[error("destination {destination:?} does not exist or routes nowhere")]
    Unroutable {
        /// The destination.
        destination: String,
    },
    /// The message is larger than the broker accepts.
    #[error("message of {size} bytes exceeds the broker limit of {limit} bytes")]
    TooLarge {
        /// The encoded size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// The envelope cannot be represented on this transport (for example a
    /// header the protocol cannot carry).
    #[error("message cannot be sent: {reason}")]
    Invalid {
        /// Why.
        reason: String,
    },
    /// Any other transport failure, assumed transient.
    #[error("publish failed")]
    Transport(#[source] BoxError),
    /// A consumer handling the message from its stored inbox gave up on it
    /// (see `tidings_consumer::StoredInbox`); never retried.
    #[error("parked: {reason}")]
    Parked {
        /// Why the consumer gave up.
        reason: String,
    },
}

impl PublishError {
    /// Whether publishing the same message later may succeed. Non-transient
    /// errors make the row poison: the relay fails it at once.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Self::Unavailable(_) | Self::Timeout | Self::Refused { .. } | Self::Transport(_)
        )
    }

    /// The error's class as the OpenTelemetry conventions' `error.type`: a
    /// short name, one per variant, so spans and metrics keep a bounded
    /// set of values.
    pub fn error_type(&self) -> &'static str {
        match self {
            Self::Unavailable(_) => "unavailable",
            Self::Timeout => "timeout",
            Self::Refused { .. } => "refused",
            Self::Unroutable { .. } => "unroutable",
            Self::TooLarge { .. } => "too_large",
            Self::Invalid { .. } => "invalid",
            Self::Transport(_) => "transport",
            Self::Parked { .. } => "parked",
        }
    }
}
