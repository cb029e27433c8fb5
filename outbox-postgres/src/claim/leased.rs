//! Leased claims: the claim commits at once, stamping its rows `in_flight`
//! with a lease token and expiry, and the settle writes under the token.
//!
//! A publish may take as long as it likes and holds no connection; a relay
//! that dies is found out when its lease expires, and the sweep returns
//! its rows. Each row is written twice: by the claim, which rewrites it
//! and adds index entries, and by the settle.

use tidings_core::{
    ClaimRequest, LeaseToken, OrderingMode, OutboxRecord, SettleReport, StoreError,
};

use crate::claim::outcomes::OutcomeColumns;
use crate::claim::row::{RowDecoder, into_records};
use crate::claim::statements::ClaimFrom;
use crate::error::store_error;
use crate::params::micros;
use crate::{ClaimMode, PgOutboxStore};

/// Claims up to the request's limit of rows under a fresh lease token;
/// returns the token and the records, in the route's order.
pub(crate) async fn claim(
    store: &PgOutboxStore,
    request: ClaimRequest<'_>,
) -> Result<(LeaseToken, Vec<OutboxRecord>), StoreError> {
    let route = request.route;
    let lease = LeaseToken::new();
    let inner = store.inner();
    let mut session = store.session().await.map_err(store_error)?;
    let query = sqlx::query(inner.sql.claim.get(
        route,
        request.limit,
        ClaimMode::Leased,
        store.skipped_slot(),
    ))
    .persistent(store.persistent())
    .bind(&route.name)
    .bind(lease.0)
    .bind(micros(request.lease))
    .bind(route.ordering == OrderingMode::PerKey);
    let from = ClaimFrom::of(route, ClaimMode::Leased, None, &inner.keys);
    let query = from.clone().bind(query);
    let rows = RowDecoder::read(request.limit, query.fetch(&mut *session));
    let rows = rows.await.map_err(store_error)?;
    session.finish().await.map_err(store_error)?;
    let (rows, unreadable) = rows.finish()?;
    if !unreadable.is_empty() {
        return Err(unreadable.set_aside(store, &route.name, Some(lease)).await);
    }
    let records = into_records(rows, route.hlc_ordering);
    from.advance(&inner.keys, route, &records, request.limit);
    Ok((lease, records))
}

/// Settles under the lease token: a row swept (and perhaps claimed again)
/// since no longer carries it and is reported lost.
pub(crate) async fn settle(
    store: &PgOutboxStore,
    route: &str,
    lease: LeaseToken,
    columns: OutcomeColumns,
) -> Result<SettleReport, StoreError> {
    if columns.is_empty() {
        return Ok(SettleReport::default());
    }
    let inner = store.inner();
    let delete = store.delete_on_publish();
    let query = if columns.all_published() {
        // The common case, without the outcome join of the general
        // statement.
        let statement = match delete {
            true => inner.sql.settle_published.clone(),
            false => inner.sql.settle_published_kept.clone(),
        };
        sqlx::query(statement)
            .bind(route)
            .bind(lease.0)
            .bind(&columns.event_id)
    } else {
        sqlx::query(inner.sql.settle.clone())
            .bind(route)
            .bind(lease.0)
            .bind(&columns.event_id)
            .bind(&columns.outcome)
            .bind(&columns.delay_us)
            .bind(&columns.error)
            .bind(delete)
    };
    let rows = store.fetch_alone(query).await?;
    columns.report(rows)
}
