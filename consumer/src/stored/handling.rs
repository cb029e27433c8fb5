//! Handling stored messages: a publisher, for a relay over the stored
//! inbox, that runs each claimed message through the consumer's pipeline
//! and answers with how the pipeline settled it.

use std::sync::Arc;

use futures::future::join_all;
use tidings_core::{
    AckError, Acker, Delivery, Envelope, PublishBatch, PublishError, Publisher, Redelivery,
};
use tokio::sync::oneshot;

use crate::parts::Parts;
use crate::process::Pipeline;

/// How the pipeline settled a stored message.
#[derive(Debug)]
enum Settled {
    Ack,
    Nack,
    DeadLetter(String),
}

/// An acker that tells the relay how the pipeline settled a message.
struct StoredAcker(oneshot::Sender<Settled>);

impl StoredAcker {
    fn tell(self, settled: Settled) -> Result<(), AckError> {
        // The relay stopped waiting only when its pass was dropped: the
        // row's lease then runs out and the message is handled again.
        let _ = self.0.send(settled);
        Ok(())
    }
}

impl Acker for StoredAcker {
    async fn ack(self) -> Result<(), AckError> {
        self.tell(Settled::Ack)
    }

    async fn nack(self, _redelivery: Redelivery) -> Result<(), AckError> {
        self.tell(Settled::Nack)
    }

    async fn dead_letter(self, reason: String) -> Result<(), AckError> {
        self.tell(Settled::DeadLetter(reason))
    }
}

/// Runs stored messages through the pipeline, a claim's messages at once
/// (the relay's publish window bounds them).
pub(super) struct Handling<P: Parts> {
    pub(super) pipeline: Arc<Pipeline<P>>,
}

impl<P: Parts> Clone for Handling<P> {
    fn clone(&self) -> Self {
        Self {
            pipeline: self.pipeline.clone(),
        }
    }
}

impl<P: Parts> Handling<P> {
    /// Handles one message; its claims so far, this one included, count as
    /// its deliveries.
    async fn handle(&self, envelope: Envelope) -> Result<(), PublishError> {
        let (tell, told) = oneshot::channel();
        let count = Some(envelope.attempts.max(1));
        let delivery = Delivery::new(envelope, count, StoredAcker(tell));
        self.pipeline.process(delivery).await;
        match told.await {
            Ok(Settled::Ack) => Ok(()),
            Ok(Settled::Nack) => Err(PublishError::Refused {
                reason: "the handler failed; handled again after the stored inbox's backoff".into(),
            }),
            Ok(Settled::DeadLetter(reason)) => Err(PublishError::Parked { reason }),
            Err(_) => Err(PublishError::Refused {
                reason: "left unsettled at shutdown".into(),
            }),
        }
    }
}

impl<P: Parts> Publisher for Handling<P> {
    async fn send(&self, batch: PublishBatch<'_>) -> Vec<Result<(), PublishError>> {
        let runs = batch.envelopes().iter().map(|e| self.handle(e.clone()));
        join_all(runs).await
    }

    fn messaging_system(&self) -> &'static str {
        self.pipeline.system
    }

    /// The pipeline parks or skips an expired message as the consumer's
    /// options say.
    fn judges_expiry(&self) -> bool {
        true
    }
}
