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

use sqlx::{ConnectOptions, PgConnection, Row};
use tidings_core::StoreError;
use tokio::sync::Mutex;
use tracing::debug;
use uuid::Uuid;

use crate::PgOutboxStore;
use crate::error::store_error;
use crate::store::{limit, micros};

/// The connection claim records are written on: opened from the pool's
/// settings on first use, kept between records and dropped after a
/// failure, so the next record connects afresh.
///
/// It is kept apart on purpose. A batch holds its claim connection until
/// it settles, and its settle waits for its record; were records written
/// on connections that batches hold, batches holding all of them would
/// each wait for a connection none of them gives back. Nor does it take
/// one from the pool, which the user's own transactions may fill. Behind a
/// transaction pooler, where the store opens no connection of its own,
/// records go through the pool, of which locked claims leave one free.
#[derive(Debug, Default)]
pub(crate) struct RecordConnection {
    slot: Mutex<Option<PgConnection>>,
}

/// Records the claim `token` of `ids`, expiring after `lease`, on the
/// store's [`RecordConnection`]. Records are written one at a time: each is
/// a single small insert that does not wait for the WAL flush.
pub(crate) async fn record(
    store: &PgOutboxStore,
    token: Uuid,
    route: &str,
    ids: &[i64],
    lease: Duration,
) -> Result<(), StoreError> {
    let inner = store.inner();
    if !store.persistent() {
        return record_pooled(store, token, route, ids, lease).await;
    }
    let mut slot = inner.records.slot.lock().await;
    let connection = match slot.as_mut() {
        Some(connection) => connection,
        None => {
            let opened = inner.pool.connect_options().connect().await;
            slot.insert(opened.map_err(store_error)?)
        }
    };
    let written = sqlx::query(inner.sql.claim_record.clone())
        .bind(token)
        .bind(route)
        .bind(ids)
        .bind(micros(lease))
        .execute(connection)
        .await;
    if let Err(error) = written {
        *slot = None;
        return Err(store_error(error));
    }
    Ok(())
}

/// Records a claim as [`record`] does, behind a transaction pooler: on
/// one of the pool's connections, in a transaction of its own. The pool
/// always has one left for it, as locked claims may hold fewer connections
/// than it has (checked when the store is built).
async fn record_pooled(
    store: &PgOutboxStore,
    token: Uuid,
    route: &str,
    ids: &[i64],
    lease: Duration,
) -> Result<(), StoreError> {
    let mut session = store.session().await.map_err(store_error)?;
    sqlx::query(store.inner().sql.claim_record.clone())
        .persistent(false)
        .bind(token)
        .bind(route)
        .bind(ids)
        .bind(micros(lease))
        .execute(&mut *session)
        .await
        .map_err(store_error)?;
    session.finish().await.map_err(store_error)
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
    let counted: HashSet<i64> = ids_of(
        sqlx::query(inner.sql.count_crashes.clone())
            .persistent(store.persistent())
            .bind(route)
            .bind(&named)
            .fetch_all(&mut *tx)
            .await,
    )?;
    let pending: HashSet<i64> = ids_of(
        sqlx::query(inner.sql.claims_pending.clone())
            .persistent(store.persistent())
            .bind(route)
            .bind(&named)
            .fetch_all(&mut *tx)
            .await,
    )?;
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

/// The `id` column of the rows a statement returned.
fn ids_of(
    rows: Result<Vec<sqlx::postgres::PgRow>, sqlx::Error>,
) -> Result<HashSet<i64>, StoreError> {
    rows.map_err(store_error)?
        .iter()
        .map(|row| row.try_get("id").map_err(store_error))
        .collect()
}
