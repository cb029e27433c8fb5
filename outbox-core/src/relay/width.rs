//! How many rows a relay claims at once.

use std::sync::atomic::{AtomicBool, Ordering};

use super::RelayOptions;
use crate::OutboxRecord;

/// The size of a relay's next claim: one publish window's worth when the
/// relay starts and after a claim that held a row with crashes counted
/// against it, the whole batch size otherwise.
///
/// A claim that dies unsettled counts a crash against every row it held,
/// so a row that kills the relay whenever it is published takes every row
/// claimed with it to the failed state once the crashes reach
/// [`max_crashes`](RelayOptions::max_crashes). Claiming narrowly after a
/// crash keeps that to a window's worth of rows, however many a relay
/// claims while nothing crashes; and a relay that has just started may
/// have been restarted by such a crash, so it starts narrow.
#[derive(Debug, Default)]
pub(super) struct ClaimWidth {
    wide: AtomicBool,
}

impl ClaimWidth {
    /// The row limit of the next claim.
    pub(super) fn limit(&self, config: &RelayOptions) -> usize {
        match self.wide.load(Ordering::Relaxed) {
            true => config.batch_size,
            false => config.batch_size.min(config.publish_window),
        }
    }

    /// Whether the next claim is a whole batch.
    pub(super) fn is_wide(&self) -> bool {
        self.wide.load(Ordering::Relaxed)
    }

    /// Widens the next claim after one whose rows never crashed, narrows
    /// it after one with a row that did.
    pub(super) fn observe(&self, records: &[OutboxRecord]) {
        let crashed = records.iter().any(|r| r.crashes() > 0);
        self.wide.store(!crashed, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::Envelope;

    fn record(attempts_started: u32, attempts_finished: u32) -> OutboxRecord {
        let envelope = Envelope::new("route", "queue", "type", Bytes::new(), "application/json");
        OutboxRecord {
            envelope,
            attempts_started,
            attempts_finished,
            last_error: None,
        }
    }

    #[test]
    fn claims_start_narrow_widen_when_clean_and_narrow_after_a_crash() {
        let config = RelayOptions::default().batch_size(500).publish_window(100);
        let width = ClaimWidth::default();
        assert_eq!(width.limit(&config), 100, "narrow at start");
        width.observe(&[record(1, 0), record(2, 1)]);
        assert_eq!(width.limit(&config), 500, "no crash among them");
        width.observe(&[record(1, 0), record(2, 0)]);
        assert_eq!(width.limit(&config), 100, "the second row crashed once");
        width.observe(&[]);
        assert_eq!(width.limit(&config), 500);
        let small = RelayOptions::default().batch_size(20).publish_window(100);
        width.observe(&[record(3, 0)]);
        assert_eq!(width.limit(&small), 20, "never past the batch size");
    }
}
