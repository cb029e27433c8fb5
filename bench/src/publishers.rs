//! Publishers that stand in for a broker, to measure the relay alone.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tidings_core::{PublishBatch, PublishError, Publisher};
use tokio::sync::Notify;
use uuid::Uuid;

/// Accepts every envelope at once and does nothing with it.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct NoopPublisher;

impl Publisher for NoopPublisher {
    async fn send(&self, batch: PublishBatch<'_>) -> Vec<Result<(), PublishError>> {
        batch.envelopes().iter().map(|_| Ok(())).collect()
    }

    fn messaging_system(&self) -> &'static str {
        "noop"
    }
}

/// Accepts every envelope at once and counts them, for a relay that runs
/// until it has published a number of events (a log-tailing relay claims
/// only what its reader has read so far, so a drain of it cannot stop at
/// its first short claim).
#[derive(Debug, Clone, Default)]
pub(crate) struct CountingPublisher {
    counted: Arc<Counted>,
}

#[derive(Debug, Default)]
struct Counted {
    count: AtomicUsize,
    /// Notified after every batch.
    more: Notify,
}

impl CountingPublisher {
    /// How many envelopes arrived.
    pub(crate) fn count(&self) -> usize {
        self.counted.count.load(Ordering::Acquire)
    }

    /// Returns once `count` envelopes have arrived.
    pub(crate) async fn reached(&self, count: usize) {
        loop {
            // Made before the check, so a batch in between still wakes it.
            let more = self.counted.more.notified();
            if self.count() >= count {
                return;
            }
            more.await;
        }
    }
}

impl Publisher for CountingPublisher {
    async fn send(&self, batch: PublishBatch<'_>) -> Vec<Result<(), PublishError>> {
        let envelopes = batch.envelopes();
        self.counted
            .count
            .fetch_add(envelopes.len(), Ordering::AcqRel);
        self.counted.more.notify_waiters();
        envelopes.iter().map(|_| Ok(())).collect()
    }

    fn messaging_system(&self) -> &'static str {
        "noop"
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
    fn messaging_system(&self) -> &'static str {
        "noop"
    }

    async fn send(&self, batch: PublishBatch<'_>) -> Vec<Result<(), PublishError>> {
        let envelopes = batch.envelopes();
        let now = Instant::now();
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        seen.extend(envelopes.iter().map(|e| (e.event_id, now)));
        envelopes.iter().map(|_| Ok(())).collect()
    }
}
