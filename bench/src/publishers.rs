//! Publishers that stand in for a broker, to measure the relay alone.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use tidings_core::{Envelope, PublishError, Publisher};
use uuid::Uuid;

/// Accepts every envelope at once and does nothing with it.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct NoopPublisher;

impl Publisher for NoopPublisher {
    async fn publish(&self, _envelope: &Envelope) -> Result<(), PublishError> {
        Ok(())
    }

    async fn publish_batch(&self, envelopes: &[Envelope]) -> Vec<Result<(), PublishError>> {
        envelopes.iter().map(|_| Ok(())).collect()
    }
}

/// Accepts every envelope at once and notes when each arrived.
#[derive(Debug, Clone, Default)]
pub(crate) struct RecordingPublisher {
    seen: Arc<Mutex<Vec<(Uuid, Instant)>>>,
}

impl RecordingPublisher {
    /// Every event id published so far, with when.
    pub(crate) fn take(&self) -> Vec<(Uuid, Instant)> {
        std::mem::take(&mut *self.seen.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// How many envelopes arrived.
    pub(crate) fn count(&self) -> usize {
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

impl Publisher for RecordingPublisher {
    async fn publish(&self, envelope: &Envelope) -> Result<(), PublishError> {
        self.publish_batch(std::slice::from_ref(envelope))
            .await
            .pop()
            .unwrap_or(Ok(()))
    }

    async fn publish_batch(&self, envelopes: &[Envelope]) -> Vec<Result<(), PublishError>> {
        let now = Instant::now();
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        seen.extend(envelopes.iter().map(|e| (e.event_id, now)));
        envelopes.iter().map(|_| Ok(())).collect()
    }
}
