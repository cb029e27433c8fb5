//! Locked claims: the rows are locked in a transaction that stays open
//! while they are published, then settled and committed in it.
//!
//! The claim rewrites nothing, so each row costs one write (its settle)
//! instead of two (the claim's rewrite, which adds index entries, and the
//! settle); a record per batch ([`records`]) keeps count of claims
//! that die. The open transaction fences the batch: no other claim
//! can take a locked row, and if the relay dies, or sits idle in the
//! transaction for longer than its lease, PostgreSQL rolls back and the
//! rows are claimable again, untouched.

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use sqlx::PgConnection;
use sqlx::postgres::PgRow;
use tidings_core::{ClaimRequest, LeaseToken, SettleReport, StoreError};
use tokio::task::JoinHandle;
use tracing::warn;
use uuid::Uuid;

use crate::claim::batch::Hold;
use crate::claim::connections::ClaimConnection;
use crate::claim::outcomes::OutcomeColumns;
use crate::claim::pooled::PooledClaim;
use crate::claim::row::{ClaimedRow, into_records};
use crate::claim::{literal, pooled, records};
use crate::error::{is_unavailable, store_error};
use crate::{PgBatch, PgOutboxStore};

/// The names the settle statements are prepared under on a claim
/// connection.
const SETTLE_PUBLISHED: &str = "tidings_settle_published";
const SETTLE_PUBLISHED_KEPT: &str = "tidings_settle_published_kept";

/// The open transaction of a locked batch, on a claim connection, its
/// rows' ids and its claim record.
pub(crate) struct LockedRows {
    /// In the batch's transaction. Dropped unsettled, it is closed, or
    /// rolled back on its way back to the pool, and the rows are released.
    connection: Held,
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

/// Where a locked batch's transaction runs.
#[derive(Debug)]
enum Held {
    /// On a connection of the store's own.
    Own(ClaimConnection),
    /// On one of the pool's, behind a transaction pooler.
    Pooled(PooledClaim),
}

impl Held {
    /// Ends a claim that took no rows, keeping an own connection for the
    /// next one.
    async fn release(self, store: &PgOutboxStore) -> Result<(), StoreError> {
        match self {
            Held::Own(mut connection) => {
                sqlx::raw_sql("rollback")
                    .execute(connection.conn())
                    .await
                    .map_err(store_error)?;
                store.inner().claims.put_back(connection);
                Ok(())
            }
            Held::Pooled(claim) => claim.rollback().await,
        }
    }
}

/// Claims by locking rows in a transaction of their own, which may sit idle
/// for at most the lease. On the store's own connections, the
/// transaction's `BEGIN` goes out with the claim, in one round trip.
pub(crate) async fn claim(
    store: &PgOutboxStore,
    request: ClaimRequest<'_>,
) -> Result<PgBatch, StoreError> {
    let route = request.route;
    let (held, rows) = if store.persistent() && binary_claims() {
        let (_, sql) = store.inner().sql.claim.locked(route, request.limit);
        let (connection, rows) = run_claim_binary(store, sql, &route.name, request.lease).await?;
        (Held::Own(connection), rows)
    } else if store.persistent() {
        let (name, sql) = store.inner().sql.claim.locked(route, request.limit);
        let script = format!(
            "{};\nexecute {name}({})",
            begin_statement(request.lease),
            literal::text(&route.name)?
        );
        let (connection, rows) = run_claim(store, (&name, sql.as_str()), script).await?;
        (Held::Own(connection), rows)
    } else {
        let (claim, rows) = pooled::claim(store, route, request.limit, request.lease).await?;
        (Held::Pooled(claim), rows)
    };
    let rows = ClaimedRow::decode_all(&rows)?;
    let token = LeaseToken::new();
    let hold = if rows.is_empty() {
        held.release(store).await?;
        Hold::Lease
    } else {
        let row_ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
        let (recorder, name, lease) = (store.clone(), route.name.clone(), request.lease);
        let record = tokio::spawn(async move {
            records::record(&recorder, token.0, &name, &row_ids, lease).await
        });
        let ids = rows
            .iter()
            .map(|r| (r.record.envelope.event_id, r.id))
            .collect();
        Hold::Locks(LockedRows {
            connection: held,
            ids,
            token: token.0,
            record,
        })
    };
    let records = into_records(rows, route.hlc_ordering);
    Ok(PgBatch::new(
        store.clone(),
        route.name.to_string(),
        token,
        records,
        hold,
    ))
}

/// Whether locked claims on the store's own connections use the extended
/// protocol (binary rows, statements prepared by sqlx) instead of the
/// simple one: `TIDINGS_CLAIM_BINARY=1`. A temporary switch for measuring.
fn binary_claims() -> bool {
    static BINARY: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *BINARY.get_or_init(|| std::env::var("TIDINGS_CLAIM_BINARY").is_ok_and(|v| v == "1"))
}

/// Opens the batch's transaction on a claim connection and runs the claim
/// in the extended protocol: `BEGIN` and the claim in two round trips.
async fn run_claim_binary(
    store: &PgOutboxStore,
    sql: sqlx::SqlStr,
    route: &str,
    lease: Duration,
) -> Result<(ClaimConnection, Vec<PgRow>), StoreError> {
    let inner = store.inner();
    let mut connection = inner.claims.take(&inner.pool).await?;
    match claim_binary_on(&mut connection, sql.clone(), route, lease).await {
        Ok(rows) => Ok((connection, rows)),
        Err(error) if connection.reused() && is_unavailable(&error) => {
            drop(connection);
            inner.claims.forget_idle();
            let mut connection = inner.claims.take(&inner.pool).await?;
            let rows = claim_binary_on(&mut connection, sql, route, lease).await;
            Ok((connection, rows.map_err(store_error)?))
        }
        Err(error) => Err(store_error(error)),
    }
}

async fn claim_binary_on(
    connection: &mut ClaimConnection,
    sql: sqlx::SqlStr,
    route: &str,
    lease: Duration,
) -> Result<Vec<PgRow>, sqlx::Error> {
    let begin = sqlx::AssertSqlSafe(begin_statement(lease));
    sqlx::raw_sql(begin).execute(connection.conn()).await?;
    sqlx::query(sql)
        .bind(route)
        .fetch_all(connection.conn())
        .await
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
pub(crate) fn begin_statement(lease: Duration) -> String {
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
        let ids: Vec<i64> = columns.event_id.iter().map(|id| self.ids[id]).collect();
        let rows = match self.connection {
            Held::Own(mut connection) => {
                let rows = write(&mut connection, store, &columns, ids, self.token).await?;
                store.inner().claims.put_back(connection);
                rows
            }
            Held::Pooled(claim) => claim.settle(store, &columns, ids, self.token).await?,
        };
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
}

/// Runs the settle statement for rows `ids`, which also deletes the claim
/// record `token`, in the open transaction on one of the store's own
/// connections, and commits. A batch whose every row was published, the
/// common case, is settled and committed in one round trip.
async fn write(
    connection: &mut ClaimConnection,
    store: &PgOutboxStore,
    columns: &OutcomeColumns,
    ids: Vec<i64>,
    token: Uuid,
) -> Result<Vec<PgRow>, StoreError> {
    let inner = store.inner();
    let rows = if columns.is_empty() {
        records::release(store, connection.conn(), token).await?;
        Vec::new()
    } else if columns.all_published() && binary_claims() {
        let statement = match store.delete_on_publish() {
            true => &inner.sql.settle_locked_published,
            false => &inner.sql.settle_locked_published_kept,
        };
        sqlx::query(statement.clone())
            .bind(ids)
            .bind(token)
            .fetch_all(connection.conn())
            .await
            .map_err(store_error)?
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
            literal::uuid(token)
        );
        let statements = [(name, statement.as_str())];
        let settled = connection.run(&statements, script).await;
        return settled.map_err(store_error);
    } else {
        settle_mixed(store, connection.conn(), columns, ids, token).await?
    };
    let committed = sqlx::raw_sql("commit").execute(connection.conn()).await;
    committed.map_err(store_error)?;
    Ok(rows)
}

/// Writes outcomes that are not all published for rows `ids`, and deletes
/// the claim record `token`, in the batch's open transaction on `conn`.
pub(crate) async fn settle_mixed(
    store: &PgOutboxStore,
    conn: &mut PgConnection,
    columns: &OutcomeColumns,
    ids: Vec<i64>,
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
