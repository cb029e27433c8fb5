//! What settling writes to the table: table mode removes (or marks)
//! published rows and fails rows for good; failed events of message mode
//! become failed rows.
//!
//! The log shows a transaction once its commit is flushed, a moment before
//! other sessions see its rows. A relay quick enough to publish in that
//! moment finds no row to remove, so the row statements say which rows
//! they reached and run again, after a short wait, for the rest.

use std::collections::HashSet;
use std::time::Duration;

use sqlx::{Acquire, PgConnection, SqlStr};
use tidings_core::{Retention, StagedEvent, StoreError};
use tracing::warn;

use super::Shared;
use super::window::Doomed;
use crate::context::Columns;
use crate::error::store_error;
use crate::tailing::TailMode;

/// Waits before writing again the rows a statement did not reach: about
/// 5 s in all, far past the moment a commit takes to become visible even
/// on a busy server.
const WAITS: [Duration; 8] = [
    Duration::from_millis(1),
    Duration::from_millis(5),
    Duration::from_millis(20),
    Duration::from_millis(50),
    Duration::from_millis(150),
    Duration::from_millis(400),
    Duration::from_secs(1),
    Duration::from_secs(3),
];

/// An event to write as failed: its place, row, event and why.
pub(super) struct Failure {
    pub(super) seq: u64,
    pub(super) row: Option<i64>,
    pub(super) event: StagedEvent,
    pub(super) reason: String,
    pub(super) attempts: u32,
}

impl Failure {
    pub(super) fn doomed(doomed: Doomed) -> Self {
        Self {
            seq: doomed.seq,
            row: doomed.incoming.row,
            event: StagedEvent {
                envelope: doomed.incoming.envelope,
                delay: None,
            },
            reason: doomed.reason,
            attempts: 0,
        }
    }
}

/// Writes the outcomes that leave a trace in the table, in one
/// transaction.
pub(super) async fn write(
    shared: &Shared,
    published: &[(i64, i32)],
    failed: &[Failure],
) -> Result<(), StoreError> {
    let store = &shared.store;
    let (tailing, sql) = store.tailing()?;
    let table = tailing.mode == TailMode::Table;
    if failed.is_empty() && (published.is_empty() || !table) {
        return Ok(());
    }
    let persistent = store.persistent();
    let mut conn = store.pool().acquire().await.map_err(store_error)?;
    let mut tx = conn.begin().await.map_err(store_error)?;
    if table && !published.is_empty() {
        let (ids, attempts): (Vec<i64>, Vec<i32>) = published.iter().copied().unzip();
        let rows = match store.options().get_retention() {
            Retention::Delete => RowWrites::new(sql.published_delete.clone(), ids),
            Retention::Keep => RowWrites::new(sql.published_keep.clone(), ids).attempts(attempts),
        };
        rows.write(&mut tx, persistent).await?;
    }
    let (rows, events): (Vec<&Failure>, Vec<&Failure>) =
        failed.iter().partition(|f| table && f.row.is_some());
    if !rows.is_empty() {
        let ids = rows.iter().filter_map(|f| f.row).collect();
        RowWrites::new(sql.fail_rows.clone(), ids)
            .reasons(rows.iter().map(|f| f.reason.clone()).collect())
            .attempts(rows.iter().map(|f| f.attempts as i32).collect())
            .write(&mut tx, persistent)
            .await?;
    }
    if !events.is_empty() {
        let reasons: Vec<&str> = events.iter().map(|f| f.reason.as_str()).collect();
        let attempts: Vec<i32> = events.iter().map(|f| f.attempts as i32).collect();
        let c = Columns::new(events.iter().map(|f| f.event.clone()).collect())?;
        sqlx::query(sql.fail_events.clone())
            .persistent(persistent)
            .bind(c.event_id)
            .bind(c.route)
            .bind(c.destination)
            .bind(c.event_type)
            .bind(c.payload)
            .bind(c.content_type)
            .bind(c.headers)
            .bind(c.ordering_key)
            .bind(c.correlation_id)
            .bind(c.causation_id)
            .bind(c.tenant_id)
            .bind(c.occurred_at)
            .bind(c.hlc)
            .bind(c.expires_at)
            .bind(reasons)
            .bind(attempts)
            .execute(&mut *tx)
            .await
            .map_err(store_error)?;
    }
    tx.commit().await.map_err(store_error)
}

/// One statement over rows by id, with a column or two per row, that
/// returns the ids it reached: `$1` the ids, then the reasons and the
/// attempts where given.
struct RowWrites {
    sql: SqlStr,
    ids: Vec<i64>,
    reasons: Option<Vec<String>>,
    attempts: Option<Vec<i32>>,
}

impl RowWrites {
    fn new(sql: SqlStr, ids: Vec<i64>) -> Self {
        Self {
            sql,
            ids,
            reasons: None,
            attempts: None,
        }
    }

    fn reasons(mut self, reasons: Vec<String>) -> Self {
        self.reasons = Some(reasons);
        self
    }

    fn attempts(mut self, attempts: Vec<i32>) -> Self {
        self.attempts = Some(attempts);
        self
    }

    /// Writes every row, again after a wait for those not yet visible;
    /// rows still missing after the last wait were removed by someone
    /// else (an operator's purge) and are left alone.
    async fn write(mut self, tx: &mut PgConnection, persistent: bool) -> Result<(), StoreError> {
        for wait in WAITS {
            let reached: HashSet<i64> = self.run(tx, persistent).await?.into_iter().collect();
            self.keep_unreached(&reached);
            if self.ids.is_empty() {
                return Ok(());
            }
            tokio::time::sleep(wait).await;
        }
        let reached: HashSet<i64> = self.run(tx, persistent).await?.into_iter().collect();
        self.keep_unreached(&reached);
        if !self.ids.is_empty() {
            warn!(rows = ?self.ids, "rows the log showed committed were gone when settled");
        }
        Ok(())
    }

    async fn run(&self, tx: &mut PgConnection, persistent: bool) -> Result<Vec<i64>, StoreError> {
        let mut query = sqlx::query_scalar(self.sql.clone())
            .persistent(persistent)
            .bind(&self.ids);
        if let Some(reasons) = &self.reasons {
            query = query.bind(reasons);
        }
        if let Some(attempts) = &self.attempts {
            query = query.bind(attempts);
        }
        query.fetch_all(&mut *tx).await.map_err(store_error)
    }

    /// Keeps only the rows not in `reached`, with their columns.
    fn keep_unreached(&mut self, reached: &HashSet<i64>) {
        let keep: Vec<bool> = self.ids.iter().map(|id| !reached.contains(id)).collect();
        retain_flagged(&mut self.ids, &keep);
        if let Some(reasons) = &mut self.reasons {
            retain_flagged(reasons, &keep);
        }
        if let Some(attempts) = &mut self.attempts {
            retain_flagged(attempts, &keep);
        }
    }
}

/// Keeps the items of `column` whose flag in `keep` is set.
fn retain_flagged<T>(column: &mut Vec<T>, keep: &[bool]) {
    let mut flags = keep.iter();
    column.retain(|_| flags.next().copied().unwrap_or(false));
}
