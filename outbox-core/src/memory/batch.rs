//! A claimed batch of the in-memory store.

use uuid::Uuid;

use super::rows::{Row, Status};
use super::store::MemoryStore;
use crate::{
    ClaimCursor, ClaimedBatch, ClaimedRows, LeaseToken, OutboxRecord, Outcome, Retention,
    SettleReport, Settlement, StoreError,
};

/// Rows claimed from a [`MemoryStore`] under one lease.
#[derive(Debug)]
pub struct MemoryBatch {
    store: MemoryStore,
    route: String,
    rows: ClaimedRows,
}

impl MemoryBatch {
    pub(super) fn new(
        store: MemoryStore,
        route: &str,
        lease: LeaseToken,
        records: Vec<OutboxRecord>,
    ) -> Self {
        Self {
            store,
            route: route.to_owned(),
            rows: ClaimedRows::new(lease, records),
        }
    }

    /// The batch, saying a claim may go on past `cursor`.
    pub(super) fn going_on_past(self, cursor: Option<ClaimCursor>) -> Self {
        let rows = self.rows.going_on_past(cursor);
        Self { rows, ..self }
    }
}

impl ClaimedBatch for MemoryBatch {
    fn rows(&self) -> &ClaimedRows {
        &self.rows
    }

    fn rows_mut(&mut self) -> &mut ClaimedRows {
        &mut self.rows
    }

    async fn settle(self, settlements: Vec<Settlement>) -> Result<SettleReport, StoreError> {
        let now = self.store.now();
        let retention = self.store.inner.retention;
        let mut report = SettleReport::default();
        let mut state = self.store.lock();
        let Some(rows) = state.routes.get_mut(&self.route) else {
            report.lost = settlements.into_iter().map(|s| s.event_id).collect();
            return Ok(report);
        };
        let mut deleted: Vec<Uuid> = Vec::new();
        for Settlement { event_id, outcome } in settlements {
            let Some(row) = rows
                .get_mut(event_id)
                .filter(|r| r.held_by(self.rows.lease))
            else {
                report.lost.push(event_id);
                continue;
            };
            row.finished += 1;
            match outcome {
                Outcome::Published => {
                    report.published += 1;
                    match retention {
                        Retention::Delete => deleted.push(event_id),
                        Retention::Keep => finish(row, Status::Published, now, None),
                    }
                }
                Outcome::Retry { delay, error } => {
                    report.rescheduled += 1;
                    row.status = Status::Pending;
                    row.available_at = now + delay;
                    row.last_error = Some(error);
                }
                Outcome::Failed { reason } => {
                    report.failed += 1;
                    finish(row, Status::Failed, now, Some(reason));
                }
            }
        }
        for id in deleted {
            rows.remove(id);
        }
        Ok(report)
    }
}

fn finish(row: &mut Row, status: Status, now: std::time::SystemTime, error: Option<String>) {
    row.status = status;
    row.finished_at = Some(now);
    if error.is_some() {
        row.last_error = error;
    }
}
