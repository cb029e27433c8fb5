//! Locked claims: the rows are locked in a transaction that stays open
//! while they are published, then settled and committed in it.
//!
//! The claim rewrites nothing, so each row costs one write (its settle)
//! instead of two (the claim's rewrite, which adds index entries, and the
//! settle); a record per batch ([`claim_records`]) keeps count of claims
//! that die. The open transaction fences the batch: no other claim
//! can take a locked row, and if the relay dies, or sits idle in the
//! transaction for longer than its lease, PostgreSQL rolls back and the
//! rows are claimable again, untouched.

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use sqlx::{AssertSqlSafe, Postgres, SqlSafeStr, Transaction};
use tidings_core::{ClaimRequest, LeaseToken, SettleReport, StoreError};
use tokio::task::JoinHandle;
use tracing::warn;
use uuid::Uuid;

use crate::batch::Hold;
use crate::claim_records;
use crate::error::store_error;
use crate::outcomes::OutcomeColumns;
use crate::record::{ClaimedRow, into_records};
use crate::{ClaimMode, PgBatch, PgOutboxStore};

/// The open transaction of a locked batch, its rows' ids and its claim
/// record.
pub(crate) struct LockedRows {
    tx: Transaction<'static, Postgres>,
    /// Row id by event id, for the rows this transaction locked.
    ids: HashMap<Uuid, i64>,
    token: Uuid,
    /// The claim record being written beside the publish, off the claim's
    /// path; the settle waits for it, so it never deletes the record
    /// before the record exists.
    record: JoinHandle<Result<(), StoreError>>,
}

impl fmt::Debug for LockedRows {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LockedRows")
            .field("rows", &self.ids.len())
            .finish_non_exhaustive()
    }
}

/// Claims by locking rows in a transaction of their own, which may sit idle
/// for at most the lease.
pub(crate) async fn claim(
    store: &PgOutboxStore,
    request: ClaimRequest<'_>,
) -> Result<PgBatch, StoreError> {
    let route = request.route;
    let inner = store.inner();
    let mut tx = inner
        .pool
        .begin_with(begin_statement(request.lease))
        .await
        .map_err(store_error)?;
    let rows = sqlx::query(inner.sql.claim.get(route, request.limit, ClaimMode::Locked))
        .bind(route.name)
        .fetch_all(&mut *tx)
        .await
        .map_err(store_error)?;
    let rows = ClaimedRow::decode_all(&rows)?;
    let token = LeaseToken::new();
    let hold = if rows.is_empty() {
        tx.rollback().await.map_err(store_error)?;
        Hold::Lease
    } else {
        let row_ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
        let (recorder, name, lease) = (store.clone(), route.name, request.lease);
        let record = tokio::spawn(async move {
            claim_records::record(&recorder, token.0, name, &row_ids, lease).await
        });
        let ids = rows
            .iter()
            .map(|r| (r.record.envelope.event_id, r.id))
            .collect();
        Hold::Locks(LockedRows {
            tx,
            ids,
            token: token.0,
            record,
        })
    };
    let records = into_records(rows, route.hlc_ordering);
    Ok(PgBatch::new(
        store.clone(),
        route.name.to_owned(),
        token,
        records,
        hold,
    ))
}

/// Opens the transaction and bounds how long it may sit idle (between
/// statements, as while the batch is published) by the lease, so a hung
/// relay gives its rows back. The only text written in is the decimal
/// digits of an integer.
fn begin_statement(lease: Duration) -> impl SqlSafeStr {
    let millis = i32::try_from(lease.as_millis()).unwrap_or(i32::MAX).max(1);
    AssertSqlSafe(format!(
        "begin; set local idle_in_transaction_session_timeout = {millis}"
    ))
}

impl LockedRows {
    /// Writes the outcomes, deletes the claim's record and commits,
    /// releasing the locks. Outcomes for rows this batch does not hold
    /// change nothing and come back as lost; rows left without an outcome
    /// are released untouched.
    pub(crate) async fn settle(
        mut self,
        store: &PgOutboxStore,
        mut columns: OutcomeColumns,
    ) -> Result<SettleReport, StoreError> {
        let foreign = columns.retain(|id| self.ids.contains_key(id));
        self.recorded().await;
        let rows = match columns.is_empty() {
            true => {
                claim_records::release(store, &mut self.tx, self.token).await?;
                Vec::new()
            }
            false => self.write(store, &columns).await?,
        };
        self.tx.commit().await.map_err(store_error)?;
        let mut report = columns.report(rows)?;
        report.lost.extend(foreign);
        Ok(report)
    }

    /// Waits for the claim record to be written. A record that could not
    /// be written only means a crash of this claim would have gone
    /// uncounted, so the settle goes on.
    async fn recorded(&mut self) {
        let written = match (&mut self.record).await {
            Ok(written) => written,
            Err(join) => Err(StoreError::Backend(join.into())),
        };
        if let Err(error) = written {
            warn!(%error, "locked claim not recorded; its crash would not have been counted");
        }
    }

    /// Runs the settle statement, which also deletes the claim's record,
    /// in the open transaction.
    async fn write(
        &mut self,
        store: &PgOutboxStore,
        columns: &OutcomeColumns,
    ) -> Result<Vec<sqlx::postgres::PgRow>, StoreError> {
        let inner = store.inner();
        let delete = store.delete_on_publish();
        let ids: Vec<i64> = columns.event_id.iter().map(|id| self.ids[id]).collect();
        let query = if columns.all_published() {
            let statement = match delete {
                true => inner.sql.settle_locked_published.clone(),
                false => inner.sql.settle_locked_published_kept.clone(),
            };
            sqlx::query(statement).bind(ids).bind(self.token)
        } else {
            sqlx::query(inner.sql.settle_locked.clone())
                .bind(ids)
                .bind(&columns.outcome)
                .bind(&columns.delay_us)
                .bind(&columns.error)
                .bind(delete)
                .bind(self.token)
        };
        query.fetch_all(&mut *self.tx).await.map_err(store_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_idle_bound_is_the_lease_in_whole_milliseconds() {
        let sql = |lease| begin_statement(lease).into_sql_str().as_str().to_owned();
        assert_eq!(
            sql(Duration::from_secs(30)),
            "begin; set local idle_in_transaction_session_timeout = 30000"
        );
        assert!(sql(Duration::ZERO).ends_with("= 1"));
        assert!(sql(Duration::MAX).ends_with(&format!("= {}", i32::MAX)));
    }
}
