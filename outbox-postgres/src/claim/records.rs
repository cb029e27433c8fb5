//! Records of locked claims, so a claim that dies unsettled still counts
//! as a crash.
//!
//! A locked claim writes nothing to its rows until it settles, and a relay
//! that dies takes its transaction with it. So each locked batch also
//! writes a record naming its rows, committed apart from its transaction;
//! the settle deletes the record in the batch's transaction. A record left
//! behind past its expiry names rows whose claim died unsettled, and the
//! sweep counts that crash against each of them that no live claim holds,
//! as the lease sweep does for leased rows: two small writes per batch
//! instead of one per row.

use std::collections::HashSet;
use std::time::Duration;

use sqlx::{PgConnection, Row, SqlStr};
use tidings_core::StoreError;
use tracing::debug;
use uuid::Uuid;

use crate::PgOutboxStore;
use crate::error::store_error;
use crate::params::{limit, micros};

/// Records the claim `token` of `ids`, expiring after `lease`, on the
/// store's [`RecordConnection`](super::connections::RecordConnection).
/// Records are written one at a time: each is a single small insert that
/// does not wait for the WAL flush.
pub(crate) async fn record(
    store: &PgOutboxStore,
    token: Uuid,
    route: &str,
    ids: &[i64],
    lease: Duration,
) -> Result<(), StoreError> {
    let inner = store.inner();
    let (first, last) = id_ranges(ids);
    let query = sqlx::query(inner.sql.claim_record.clone())
        .persistent(store.persistent())
        .bind(token)
        .bind(route)
        .bind(first)
        .bind(last)
        .bind(micros(lease));
    match store.persistent() {
        true => inner.records.execute(&inner.pool, query).await,
        // Behind a transaction pooler: on one of the pool's connections, in
        // a transaction of its own. The pool always has one left for it, as
        // locked claims may hold fewer connections than it has (checked
        // when the store is built).
        false => store.execute_alone(query).await.map(drop),
    }
}

/// Deletes the record of claim `token` in the batch's transaction.
pub(crate) async fn release(
    store: &PgOutboxStore,
    tx: &mut PgConnection,
    token: Uuid,
) -> Result<(), StoreError> {
    sqlx::query(store.inner().sql.claim_release.clone())
        .persistent(store.persistent())
        .bind(token)
        .execute(tx)
        .await
        .map_err(store_error)?;
    Ok(())
}

/// Counts a crash against the rows of up to `limit` expired records of
/// `route` that no claim holds now; returns how many rows were counted.
/// Rows still held by a live claim stay in their record for a later sweep.
pub(crate) async fn count_crashes(
    store: &PgOutboxStore,
    route: &str,
    limit_records: usize,
) -> Result<u64, StoreError> {
    let inner = store.inner();
    let mut tx = inner.pool.begin().await.map_err(store_error)?;
    let expired: Vec<(Uuid, Vec<i64>)> = sqlx::query(inner.sql.claims_expired.clone())
        .persistent(store.persistent())
        .bind(route)
        .bind(limit(limit_records))
        .fetch_all(&mut *tx)
        .await
        .map_err(store_error)?
        .iter()
        .map(|row| Ok((row.try_get("token")?, row.try_get("ids")?)))
        .collect::<Result<_, sqlx::Error>>()
        .map_err(store_error)?;
    if expired.is_empty() {
        return Ok(0);
    }
    let named: Vec<i64> = expired.iter().flat_map(|(_, ids)| ids).copied().collect();
    let mut ids_of = async |sql: &SqlStr| -> Result<HashSet<i64>, StoreError> {
        let rows = sqlx::query(sql.clone())
            .persistent(store.persistent())
            .bind(route)
            .bind(&named)
            .fetch_all(&mut *tx)
            .await
            .map_err(store_error)?;
        rows.iter()
            .map(|row| row.try_get("id").map_err(store_error))
            .collect()
    };
    let counted = ids_of(&inner.sql.count_crashes).await?;
    let pending = ids_of(&inner.sql.claims_pending).await?;
    for (token, ids) in &expired {
        let held: Vec<i64> = ids
            .iter()
            .filter(|id| pending.contains(id) && !counted.contains(id))
            .copied()
            .collect();
        sqlx::query(inner.sql.claims_trim.clone())
            .persistent(store.persistent())
            .bind(token)
            .bind(&held)
            .execute(&mut *tx)
            .await
            .map_err(store_error)?;
    }
    tx.commit().await.map_err(store_error)?;
    if !counted.is_empty() {
        debug!(
            rows = counted.len(),
            "crashes of locked claims that died unsettled counted"
        );
    }
    Ok(counted.len() as u64)
}

/// Row ids as the runs of consecutive ids they make: the first and the
/// last id of each run, in order. A claim's rows are mostly one run, so
/// its record names a few ranges rather than every row.
pub(crate) fn id_ranges(ids: &[i64]) -> (Vec<i64>, Vec<i64>) {
    let mut sorted = ids.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let (mut first, mut last) = (Vec::new(), Vec::<i64>::new());
    for id in sorted {
        match last.last_mut() {
            Some(end) if *end + 1 == id => *end = id,
            _ => {
                first.push(id);
                last.push(id);
            }
        }
    }
    (first, last)
}

#[cfg(test)]
mod tests {
    use super::id_ranges;

    #[test]
    fn ids_make_runs_of_consecutive_ids() {
        assert_eq!(id_ranges(&[]), (vec![], vec![]));
        assert_eq!(id_ranges(&[7]), (vec![7], vec![7]));
        assert_eq!(
            id_ranges(&[5, 3, 4, 9, 10, 12, 4]),
            (vec![3, 9, 12], vec![5, 10, 12])
        );
    }
}
