//! Locked claims behind a transaction pooler, on the pool's connections.
//!
//! Where the pool reaches PostgreSQL through a pooler in transaction mode
//! ([`Pooling::Transaction`](crate::Pooling::Transaction)), a locked batch
//! holds one of the pool's connections, in the batch's transaction, from
//! its claim to its settle: the pooler keeps one server session for the
//! whole transaction, so the row locks and the idle bound (`set local`)
//! hold as on a direct connection. Nothing is prepared by name: the claim
//! and the settle are sent unnamed, in the transaction, each parsed and
//! then run, so a batch takes five round trips (begin, claim, settle,
//! commit, beside the pool's check of the connection) where the store's
//! own connections take two. At most
//! [`claim_connections`](crate::PgOutboxOptions::claim_connections) are
//! held at once, always fewer than the pool has, so claim records and
//! staging find one.
//!
//! Against a broker's publish these round trips hardly show: draining
//! into RabbitMQ through PgBouncer 1.18 in claims of 500, a relay kept
//! 0.87–1.08 of its direct rate, with the same PostgreSQL CPU per event
//! (`tidings-bench drain-rabbitmq-pooled`, `docs/benchmarks.md`), so
//! locked claims stay the default behind a pooler too.

use sqlx::{AssertSqlSafe, Postgres, Transaction};
use tidings_core::{ClaimRequest, StoreError};
use tokio::sync::OwnedSemaphorePermit;
use uuid::Uuid;

use crate::PgOutboxStore;
use crate::claim::outcomes::{self, OutcomeColumns, Settled, settle_locked};
use crate::claim::records;
use crate::claim::row::{ClaimedRow, RowDecoder};
use crate::claim::statements::{ClaimFrom, begin_statement, locked_claim};
use crate::claim::unreadable::Unreadable;
use crate::error::store_error;

/// A pooled connection in a locked batch's transaction, and its place
/// among the claim connections.
#[derive(Debug)]
pub(crate) struct PooledClaim {
    /// Dropped unsettled, it rolls back as the connection goes back to
    /// the pool.
    tx: Transaction<'static, Postgres>,
    _permit: OwnedSemaphorePermit,
}

/// Opens a batch's transaction on a pooled connection and locks up to
/// `limit` claimable rows of `route` in it, starting `from` where the
/// claim says; returns the rows decoded as they arrived, and those that
/// could not be read.
pub(crate) async fn claim(
    store: &PgOutboxStore,
    request: &ClaimRequest<'_>,
    from: ClaimFrom,
) -> Result<(PooledClaim, Vec<ClaimedRow>, Unreadable), StoreError> {
    let (route, limit, lease) = (request.route, request.limit, request.lease);
    let inner = store.inner();
    let permit = inner.claims.permit().await?;
    let begin = AssertSqlSafe(begin_statement(lease));
    let mut tx = inner.pool.begin_with(begin).await.map_err(store_error)?;
    let sql = inner.sql.claim.locked(route, limit, store.skipped_slot());
    let query = locked_claim(sql, route, from).persistent(false);
    let rows = RowDecoder::read(limit, query.fetch(&mut *tx));
    let (rows, unreadable) = rows.await.map_err(store_error)?.finish()?;
    let claim = PooledClaim {
        tx,
        _permit: permit,
    };
    Ok((claim, rows, unreadable))
}

impl PooledClaim {
    /// Ends a claim that took no rows.
    pub(crate) async fn rollback(self) -> Result<(), StoreError> {
        self.tx.rollback().await.map_err(store_error)
    }

    /// Writes the outcomes for rows `ids` (by their order in `columns`),
    /// deletes the claim record `token` and commits; returns what the
    /// settle statement sent back.
    pub(crate) async fn settle(
        mut self,
        store: &PgOutboxStore,
        columns: &OutcomeColumns,
        ids: &[i64],
        token: Uuid,
    ) -> Result<Settled, StoreError> {
        let inner = store.inner();
        let settled = if columns.is_empty() {
            records::release(store, &mut self.tx, token).await?;
            Settled::Rows(Vec::new())
        } else if columns.all_published() {
            let statement = match store.delete_on_publish() {
                true => &inner.sql.settle_locked_published,
                false => &inner.sql.settle_locked_published_kept,
            };
            let (first, last) = records::id_ranges(ids);
            let settled = sqlx::query(statement.clone())
                .persistent(false)
                .bind(first)
                .bind(last)
                .bind(token)
                .bind(ids.len() as i64)
                .fetch_all(&mut *self.tx)
                .await
                .map_err(store_error)?;
            outcomes::published(&settled)?
        } else {
            Settled::Rows(settle_locked(store, &mut self.tx, columns, ids, token).await?)
        };
        self.tx.commit().await.map_err(store_error)?;
        Ok(settled)
    }
}
