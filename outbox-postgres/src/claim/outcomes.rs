//! A batch's outcomes as the columns the settle statements bind, and the
//! report read back from the rows they settled.

use std::collections::HashSet;

use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};
use tidings_core::{Outcome, SettleReport, Settlement, StoreError};
use tracing::warn;
use uuid::Uuid;

use crate::PgOutboxStore;
use crate::error::store_error;
use crate::params::micros;

const PUBLISHED: &str = "published";
const RETRY: &str = "retry";
const FAILED: &str = "failed";

/// The settlements, one array per column, each event id once (the first
/// outcome given for it wins).
#[derive(Debug, Default)]
pub(crate) struct OutcomeColumns {
    pub(crate) event_id: Vec<Uuid>,
    pub(crate) outcome: Vec<&'static str>,
    pub(crate) delay_us: Vec<i64>,
    pub(crate) error: Vec<Option<String>>,
}

impl OutcomeColumns {
    pub(crate) fn new(settlements: Vec<Settlement>) -> Self {
        let mut seen = HashSet::with_capacity(settlements.len());
        let mut c = Self::default();
        for Settlement { event_id, outcome } in settlements {
            if !seen.insert(event_id) {
                continue;
            }
            let (kind, delay, error) = match outcome {
                Outcome::Published => (PUBLISHED, 0, None),
                Outcome::Retry { delay, error } => (RETRY, micros(delay), Some(error)),
                Outcome::Failed { reason } => (FAILED, 0, Some(reason)),
            };
            c.push(event_id, kind, delay, error);
        }
        c
    }

    fn push(
        &mut self,
        event_id: Uuid,
        outcome: &'static str,
        delay_us: i64,
        error: Option<String>,
    ) {
        self.event_id.push(event_id);
        self.outcome.push(outcome);
        self.delay_us.push(delay_us);
        self.error.push(error);
    }

    /// Whether there is nothing to settle.
    pub(crate) fn is_empty(&self) -> bool {
        self.event_id.is_empty()
    }

    /// Whether every row was published.
    pub(crate) fn all_published(&self) -> bool {
        self.outcome.iter().all(|kind| *kind == PUBLISHED)
    }

    /// Splits off the rows `keep` refuses, returning their event ids.
    pub(crate) fn retain(&mut self, keep: impl Fn(&Uuid) -> bool) -> Vec<Uuid> {
        let all = std::mem::take(self);
        let mut refused = Vec::new();
        let rows = all
            .event_id
            .into_iter()
            .zip(all.outcome)
            .zip(all.delay_us)
            .zip(all.error);
        for (((event_id, outcome), delay_us), error) in rows {
            if keep(&event_id) {
                self.push(event_id, outcome, delay_us, error);
            } else {
                refused.push(event_id);
            }
        }
        refused
    }

    /// The report of a batch whose every row was published but for the
    /// `missed` ones, which were lost.
    pub(crate) fn report_published_but(self, missed: Vec<Uuid>) -> SettleReport {
        if !missed.is_empty() {
            warn!(lost = missed.len(), "lease lost; marks refused");
        }
        SettleReport {
            published: self.event_id.len() - missed.len(),
            lost: missed,
            ..SettleReport::default()
        }
    }

    /// Counts the rows a settle statement returned (`event_id`, `outcome`);
    /// every row asked for and not returned was lost.
    pub(crate) fn report(self, rows: Vec<PgRow>) -> Result<SettleReport, StoreError> {
        let mut report = SettleReport::default();
        let mut settled = HashSet::with_capacity(rows.len());
        for row in rows {
            let event_id: Uuid = row.try_get("event_id").map_err(store_error)?;
            let outcome: &str = row.try_get("outcome").map_err(store_error)?;
            match outcome {
                PUBLISHED => report.published += 1,
                RETRY => report.rescheduled += 1,
                _ => report.failed += 1,
            }
            settled.insert(event_id);
        }
        report.lost = self
            .event_id
            .into_iter()
            .filter(|id| !settled.contains(id))
            .collect();
        if !report.lost.is_empty() {
            warn!(lost = report.lost.len(), "lease lost; marks refused");
        }
        Ok(report)
    }
}

/// What a locked batch's settle statement sent back.
#[derive(Debug)]
pub(crate) enum Settled {
    /// A row (`event_id`, `outcome`) for each row settled.
    Rows(Vec<PgRow>),
    /// Every row was published: `None` when the statement settled every
    /// row asked for, otherwise the row ids of those it did settle.
    Published(Option<Vec<i64>>),
}

/// Reads what an all-published settle statement sent back: one row, its
/// `settled` column null when every row asked for was settled.
pub(crate) fn published(rows: &[PgRow]) -> Result<Settled, StoreError> {
    let row = rows
        .first()
        .ok_or_else(|| StoreError::Backend("an all-published settle sent back no row".into()))?;
    let settled = row.try_get("settled").map_err(store_error)?;
    Ok(Settled::Published(settled))
}

/// Writes outcomes that are not all published for rows `ids`, and deletes
/// the claim record `token`, in a locked batch's open transaction on
/// `conn`, on a connection of the store's or of the pool's alike.
pub(crate) async fn settle_locked(
    store: &PgOutboxStore,
    conn: &mut PgConnection,
    columns: &OutcomeColumns,
    ids: &[i64],
    token: Uuid,
) -> Result<Vec<PgRow>, StoreError> {
    sqlx::query(store.inner().sql.settle_locked.clone())
        .persistent(store.persistent())
        .bind(ids)
        .bind(&columns.outcome)
        .bind(&columns.delay_us)
        .bind(&columns.error)
        .bind(store.delete_on_publish())
        .bind(token)
        .fetch_all(conn)
        .await
        .map_err(store_error)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_first_outcome_of_an_id_wins_and_refused_rows_split_off() {
        let (a, b, c) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        let settle = |event_id, outcome| Settlement { event_id, outcome };
        let retry = Outcome::Retry {
            delay: Duration::from_millis(3),
            error: "later".into(),
        };
        let mut columns = OutcomeColumns::new(vec![
            settle(a, Outcome::Published),
            settle(b, retry),
            settle(a, Outcome::Failed { reason: "x".into() }),
            settle(c, Outcome::Published),
        ]);
        assert_eq!(columns.event_id, [a, b, c]);
        assert_eq!(columns.outcome, [PUBLISHED, RETRY, PUBLISHED]);
        assert!(!columns.all_published());

        let refused = columns.retain(|id| *id != b);
        assert_eq!(refused, [b]);
        assert_eq!(columns.event_id, [a, c]);
        assert_eq!(columns.delay_us, [0, 0]);
        assert!(columns.all_published());
    }
}
