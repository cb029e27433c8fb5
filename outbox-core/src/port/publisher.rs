//! Sending envelopes to a broker.

use std::future::Future;

use super::{BoxError, Queued};
use crate::Envelope;

/// Sends envelopes to their destination.
///
/// `Ok` means the broker has accepted the message (a publisher confirm, a
/// successful API response), never merely that it was written to a socket.
pub trait Publisher: Clone + Send + Sync + 'static {
    /// Publishes one envelope to `envelope.destination`.
    fn publish(&self, envelope: &Envelope)
    -> impl Future<Output = Result<(), PublishError>> + Send;

    /// Publishes a batch; one result per envelope, in order. One failure
    /// fails only its own envelope. The default publishes concurrently;
    /// transports override it to pipeline or use batch APIs.
    fn publish_batch(
        &self,
        envelopes: &[Envelope],
    ) -> impl Future<Output = Vec<Result<(), PublishError>>> + Send {
        futures::future::join_all(envelopes.iter().map(|e| self.publish(e)))
    }

    /// Publishes a batch as [`publish_batch`](Self::publish_batch) does,
    /// and drops `queued` once every message of it is queued on its way to
    /// the broker in batch order, ahead of anything published later: from
    /// then on the relay may publish its next batch while this one awaits
    /// its answers. The default drops it once the batch is answered, which
    /// is always right; a transport overrides it where it can say sooner.
    fn publish_batch_queued(
        &self,
        envelopes: &[Envelope],
        queued: Queued,
    ) -> impl Future<Output = Vec<Result<(), PublishError>>> + Send {
        async move {
            let results = self.publish_batch(envelopes).await;
            drop(queued);
            results
        }
    }

    /// The broker, as the OpenTelemetry conventions' `messaging.system`
    /// names it (`rabbitmq`, `aws_sqs`, `kafka`), for the relay's spans.
    /// Defaults to [`UNKNOWN_SYSTEM`](crate::telemetry::UNKNOWN_SYSTEM).
    fn messaging_system(&self) -> &'static str {
        crate::telemetry::UNKNOWN_SYSTEM
    }
}

/// Logs one publish's outcome the way every transport does: `debug` when
/// accepted, `info` with the error and its class when not. Returns the
/// outcome unchanged.
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
        }
    }
}
