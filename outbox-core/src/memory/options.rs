//! How an in-memory store is set up: its clock and its retention.

use crate::{Retention, SharedClock, SystemClock};

/// Options of a [`MemoryStore`](super::MemoryStore).
///
/// ```
/// use std::sync::Arc;
/// use tidings_core::memory::{MemoryStore, MemoryStoreOptions};
/// use tidings_core::{ManualClock, Retention};
///
/// let clock = ManualClock::starting_now();
/// let options = MemoryStoreOptions::new()
///     .clock(Arc::new(clock.clone()))
///     .retention(Retention::Keep);
/// assert_eq!(options.get_retention(), Retention::Keep);
/// let store = MemoryStore::with_options(options);
/// clock.advance(std::time::Duration::from_secs(60));
/// ```
#[derive(Debug, Clone)]
pub struct MemoryStoreOptions {
    clock: SharedClock,
    retention: Retention,
}

impl MemoryStoreOptions {
    /// The defaults: the system clock, published rows deleted.
    pub fn new() -> Self {
        Self::default()
    }
}

crate::settings!(MemoryStoreOptions {
    /// The clock the store reads time from: a
    /// [`ManualClock`](crate::ManualClock) in tests, so delays and retries
    /// pass when the test says. Default: the system clock
    /// ([`SystemClock::shared`]).
    clock(clock: SharedClock), get_clock: &SharedClock;
    /// What happens to published rows; default [`Retention::Delete`].
    retention(retention: Retention), get_retention: Retention;
});

impl Default for MemoryStoreOptions {
    fn default() -> Self {
        Self {
            clock: SystemClock::shared(),
            retention: Retention::default(),
        }
    }
}
