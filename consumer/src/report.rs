//! What a consumer did.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Counts of a consumer's outcomes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConsumerReport {
    /// Deliveries handled and acked.
    pub processed: u64,
    /// Deliveries skipped as duplicates and acked.
    pub duplicates: u64,
    /// Deliveries dead-lettered: undecodable, permanent failures, past
    /// `max_deliveries`.
    pub parked: u64,
    /// Deliveries nacked for redelivery after transient failures.
    pub failed: u64,
    /// Settlements the broker did not take; it redelivers those.
    pub settle_errors: u64,
    /// Of the processed and duplicate deliveries, those committed in a
    /// transaction shared with others
    /// ([`ConsumerOptions::max_batch`](crate::ConsumerOptions::max_batch)).
    pub batched: u64,
    /// Deliveries that arrived past their expiry, parked (and counted in
    /// `parked` too) or skipped and acked, as
    /// [`ConsumerOptions::expired`](crate::ConsumerOptions::expired) says.
    pub expired: u64,
    /// Deliveries of an event type the consumer has no handler for
    /// ([`EventHandlers`](crate::EventHandlers)), parked (and counted in
    /// `parked` too) or skipped and acked, as
    /// [`EventHandlers::unknown`](crate::EventHandlers::unknown) says.
    pub unknown: u64,
}

#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) processed: AtomicU64,
    pub(crate) duplicates: AtomicU64,
    pub(crate) parked: AtomicU64,
    pub(crate) failed: AtomicU64,
    pub(crate) settle_errors: AtomicU64,
    pub(crate) batched: AtomicU64,
    pub(crate) expired: AtomicU64,
    pub(crate) unknown: AtomicU64,
}

impl Counters {
    pub(crate) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Relaxed);
    }

    pub(crate) fn report(&self) -> ConsumerReport {
        ConsumerReport {
            processed: self.processed.load(Relaxed),
            duplicates: self.duplicates.load(Relaxed),
            parked: self.parked.load(Relaxed),
            failed: self.failed.load(Relaxed),
            settle_errors: self.settle_errors.load(Relaxed),
            batched: self.batched.load(Relaxed),
            expired: self.expired.load(Relaxed),
            unknown: self.unknown.load(Relaxed),
        }
    }
}
