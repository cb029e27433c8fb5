//! A batch claimed from the window, and what settling it writes.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tidings_core::port::error_chain;
use tidings_core::{ClaimedBatch, ClaimedRows, Outcome, SettleReport, Settlement, StoreError};
use tracing::warn;
use uuid::Uuid;

use super::Shared;
use super::outcomes::Failure;
use super::window::Claimed;

/// A batch of events taken from the slot's window.
#[derive(Debug)]
pub struct WalBatch {
    shared: Arc<Shared>,
    generation: u64,
    rows: ClaimedRows,
    /// Each event's place in the window and row, by event id (an id the
    /// log carries twice is claimed twice).
    places: HashMap<Uuid, Vec<(u64, Option<i64>)>>,
    /// Whether its events were listed as in flight (see
    /// [`crashes`](super::crashes)).
    careful: bool,
}

impl WalBatch {
    pub(super) fn new(
        shared: Arc<Shared>,
        generation: u64,
        mut rows: ClaimedRows,
        claimed: Vec<Claimed>,
        careful: bool,
    ) -> Self {
        let mut places: HashMap<Uuid, Vec<_>> = HashMap::with_capacity(claimed.len());
        rows.records.reserve(claimed.len());
        for c in claimed {
            places
                .entry(c.record.envelope.event_id)
                .or_default()
                .push((c.seq, c.row));
            rows.records.push(c.record);
        }
        Self {
            shared,
            generation,
            rows,
            places,
            careful,
        }
    }
}

impl ClaimedBatch for WalBatch {
    fn rows(&self) -> &ClaimedRows {
        &self.rows
    }

    fn rows_mut(&mut self) -> &mut ClaimedRows {
        &mut self.rows
    }

    async fn settle(mut self, settlements: Vec<Settlement>) -> Result<SettleReport, StoreError> {
        let mut report = SettleReport::default();
        let mut published = Vec::new();
        let mut failed = Vec::new();
        let mut lost = Vec::new();
        let mut settled = Vec::new();
        {
            let mut window = self.shared.window();
            for Settlement { event_id, outcome } in settlements {
                let place = self.places.get_mut(&event_id).and_then(|p| p.pop());
                let Some((seq, row)) = place else {
                    continue;
                };
                if self.careful {
                    settled.push(event_id);
                }
                match outcome {
                    Outcome::Published => {
                        published.push((seq, row, event_id, window.attempts(seq)));
                    }
                    Outcome::Failed { reason } => match window.failing(self.generation, seq) {
                        Some((event, attempts)) => failed.push(Failure {
                            seq,
                            row,
                            event,
                            reason,
                            attempts,
                        }),
                        None => lost.push(event_id),
                    },
                    Outcome::Retry { delay, error } => {
                        match window.retry(self.generation, seq, delay, error) {
                            true => report.rescheduled += 1,
                            false => lost.push(event_id),
                        }
                    }
                }
            }
        }
        let published_rows: Vec<(i64, i32)> = published
            .iter()
            .filter_map(|&(_, row, _, attempts)| Some((row?, attempts)))
            .collect();
        let written = super::outcomes::write(&self.shared, &published_rows, &failed).await;
        if let Err(error) = written {
            // Nothing was recorded: every event goes round again.
            let mut window = self.shared.window();
            let seqs = published
                .iter()
                .map(|p| p.0)
                .chain(failed.iter().map(|f| f.seq));
            for seq in seqs {
                window.retry(self.generation, seq, Duration::ZERO, error.to_string());
            }
            return Err(error);
        }
        self.finish(published, failed, &mut report, &mut lost);
        self.shared.room.notify_waiters();
        report.lost = lost;
        if !settled.is_empty() {
            if let Err(e) = super::crashes::settled(&self.shared.store, settled).await {
                // Left listed, they are charged a crash only if this
                // session dies too.
                warn!(error = %error_chain(&e), "unlisting settled events failed");
            }
        }
        Ok(report)
    }
}

impl WalBatch {
    /// Finishes the events whose outcomes are written, and drops them from
    /// the window now rather than at the next confirmation, so the reader
    /// refills it at once.
    fn finish(
        &self,
        published: Vec<(u64, Option<i64>, Uuid, i32)>,
        failed: Vec<Failure>,
        report: &mut SettleReport,
        lost: &mut Vec<Uuid>,
    ) {
        let mut window = self.shared.window();
        for (seq, _, event_id, _) in published {
            match window.finish(self.generation, seq) {
                true => report.published += 1,
                false => lost.push(event_id),
            }
        }
        for f in failed {
            match window.finish(self.generation, f.seq) {
                true => report.failed += 1,
                false => lost.push(f.event.envelope.event_id),
            }
        }
        window.advance();
    }
}

impl Drop for WalBatch {
    /// Events the batch took and never settled (a relay dropping it, a
    /// settlement that left one out) go back to wait their turn, so none
    /// holds the slot's position for good.
    fn drop(&mut self) {
        let left: Vec<u64> = self
            .places
            .values()
            .flatten()
            .map(|&(seq, _)| seq)
            .collect();
        if left.is_empty() {
            return;
        }
        let mut window = self.shared.window();
        for seq in left {
            let why = "claimed and never settled".to_owned();
            window.retry(self.generation, seq, Duration::ZERO, why);
        }
    }
}
