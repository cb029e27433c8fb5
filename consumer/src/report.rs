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

/// What the consumer counts: one counter per field of [`ConsumerReport`].
#[derive(Debug, Clone, Copy)]
pub(crate) enum Count {
    Processed,
    Duplicates,
    Parked,
    Failed,
    SettleErrors,
    Batched,
    Expired,
    Unknown,
}

/// The consumer's counters, one per [`Count`].
#[derive(Debug, Default)]
pub(crate) struct Counters([AtomicU64; Count::Unknown as usize + 1]);

impl Counters {
    /// Adds one to `count`.
    pub(crate) fn bump(&self, count: Count) {
        self.add(count, 1);
    }

    /// Adds `n` to `count`.
    pub(crate) fn add(&self, count: Count, n: u64) {
        self.0[count as usize].fetch_add(n, Relaxed);
    }

    /// The counts so far.
    pub(crate) fn report(&self) -> ConsumerReport {
        let read = |count: Count| self.0[count as usize].load(Relaxed);
        ConsumerReport {
            processed: read(Count::Processed),
            duplicates: read(Count::Duplicates),
            parked: read(Count::Parked),
            failed: read(Count::Failed),
            settle_errors: read(Count::SettleErrors),
            batched: read(Count::Batched),
            expired: read(Count::Expired),
            unknown: read(Count::Unknown),
        }
    }
}
