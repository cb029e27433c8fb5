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

use sqlx::postgres::PgRow;
use tidings_core::{ClaimRequest, LeaseToken, SettleReport, StoreError};
use tokio::task::JoinHandle;
use tracing::warn;
use uuid::Uuid;

use crate::batch::Hold;
use crate::claim_connections::ClaimConnection;
use crate::error::{is_unavailable, store_error};
use crate::outcomes::OutcomeColumns;
use crate::record::{ClaimedRow, into_records};
use crate::{PgBatch, PgOutboxStore, claim_records, literal};

/// The names the settle statements are prepared under on a claim
/// connection.
const SETTLE_PUBLISHED: &str = "tidings_settle_published";
const SETTLE_PUBLISHED_KEPT: &str = "tidings_settle_published_kept";

/// The open transaction of a locked batch, on a claim connection of the
/// store's, its rows' ids and its claim record.
pub(crate) struct LockedRows {
    /// In the batch's transaction. Dropped unsettled, it is closed, and
    /// the server rolls the transaction back.
    connection: ClaimConnection,
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
/// for at most the lease. The transaction's `BEGIN` goes out with the
/// claim, in one round trip.
pub(crate) async fn claim(
    store: &PgOutboxStore,
    request: ClaimRequest<'_>,
) -> Result<PgBatch, StoreError> {
    let route = request.route;
    let (name, sql) = store.inner().sql.claim.locked(route, request.limit);
    let script = format!(
        "{};\nexecute {name}({})",
        begin_statement(request.lease),
        literal::text(route.name)?
    );
    let (mut connection, rows) = run_claim(store, (&name, sql.as_str()), script).await?;
    let rows = ClaimedRow::decode_all(&rows)?;
    let token = LeaseToken::new();
    let hold = if rows.is_empty() {
        sqlx::raw_sql("rollback")
            .execute(connection.conn())
            .await
            .map_err(store_error)?;
        store.inner().claims.put_back(connection);
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
            connection,
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

/// Runs a claim `script` on a claim connection, preparing `statement`
/// there first if need be. A connection kept idle may have been closed
/// meanwhile, say by a server restart; then the idle ones are let go and
/// the claim runs once more on a new one.
async fn run_claim(
    store: &PgOutboxStore,
    statement: (&str, &str),
    script: String,
) -> Result<(ClaimConnection, Vec<PgRow>), StoreError> {
    let inner = store.inner();
    let mut connection = inner.claims.take(&inner.pool).await?;
    match connection.run(&[statement], script.clone()).await {
        Ok(rows) => Ok((connection, rows)),
        Err(error) if connection.reused() && is_unavailable(&error) => {
            drop(connection);
            inner.claims.forget_idle();
            let mut connection = inner.claims.take(&inner.pool).await?;
            let rows = connection.run(&[statement], script).await;
            Ok((connection, rows.map_err(store_error)?))
        }
        Err(error) => Err(store_error(error)),
    }
}

/// Opens the transaction and bounds how long it may sit idle (between
/// statements, as while the batch is published) by the lease, so a hung
/// relay gives its rows back. The only text written in is the decimal
/// digits of an integer.
fn begin_statement(lease: Duration) -> String {
    let millis = i32::try_from(lease.as_millis()).unwrap_or(i32::MAX).max(1);
    format!("begin; set local idle_in_transaction_session_timeout = {millis}")
}

impl LockedRows {
    /// Writes the outcomes, deletes the claim's record and commits,
    /// releasing the locks. Outcomes for rows this batch does not hold
    /// change nothing and come back as lost; rows left without an outcome
    /// are released untouched. The connection is kept for the next batch
    /// once committed, and closed after a failure.
    pub(crate) async fn settle(
        mut self,
        store: &PgOutboxStore,
        mut columns: OutcomeColumns,
    ) -> Result<SettleReport, StoreError> {
        let foreign = columns.retain(|id| self.ids.contains_key(id));
        self.recorded().await;
        let rows = self.write(store, &columns).await?;
        store.inner().claims.put_back(self.connection);
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
    /// in the open transaction, and commits. A batch whose every row was
    /// published, the common case, is settled and committed in one round
    /// trip.
    async fn write(
        &mut self,
        store: &PgOutboxStore,
        columns: &OutcomeColumns,
    ) -> Result<Vec<PgRow>, StoreError> {
        let inner = store.inner();
        let ids: Vec<i64> = columns.event_id.iter().map(|id| self.ids[id]).collect();
        let conn = self.connection.conn();
        let rows = if columns.is_empty() {
            claim_records::release(store, &mut *conn, self.token).await?;
            Vec::new()
        } else if columns.all_published() {
            let (name, statement) = match store.delete_on_publish() {
                true => (SETTLE_PUBLISHED, &inner.sql.settle_locked_published),
                false => (
                    SETTLE_PUBLISHED_KEPT,
                    &inner.sql.settle_locked_published_kept,
                ),
            };
            let script = format!(
                "execute {name}({}, {});\ncommit",
                literal::bigints(&ids),
                literal::uuid(self.token)
            );
            let statements = [(name, statement.as_str())];
            let settled = self.connection.run(&statements, script).await;
            return settled.map_err(store_error);
        } else {
            sqlx::query(inner.sql.settle_locked.clone())
                .bind(ids)
                .bind(&columns.outcome)
                .bind(&columns.delay_us)
                .bind(&columns.error)
                .bind(store.delete_on_publish())
                .bind(self.token)
                .fetch_all(&mut *conn)
                .await
                .map_err(store_error)?
        };
        let committed = sqlx::raw_sql("commit").execute(conn).await;
        committed.map_err(store_error)?;
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_idle_bound_is_the_lease_in_whole_milliseconds() {
        let sql = begin_statement;
        assert_eq!(
            sql(Duration::from_secs(30)),
            "begin; set local idle_in_transaction_session_timeout = 30000"
        );
        assert!(sql(Duration::ZERO).ends_with("= 1"));
        assert!(sql(Duration::MAX).ends_with(&format!("= {}", i32::MAX)));
    }
}
