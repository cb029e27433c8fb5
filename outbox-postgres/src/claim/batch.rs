//! A claimed batch and its settlement in one fenced statement.

use tidings_core::{ClaimedBatch, LeaseToken, OutboxRecord, SettleReport, Settlement, StoreError};
use tracing::instrument;

use crate::PgOutboxStore;
use crate::claim::locked::LockedRows;
use crate::claim::outcomes::OutcomeColumns;
use crate::error::store_error;

/// Rows claimed by one relay, leased or locked as the store's
/// [`ClaimMode`](crate::ClaimMode) says.
///
/// A leased batch's claim is committed: settling writes under the lease
/// token, and a sweep may hand the rows to another relay once the lease
/// expires. A locked batch holds its rows' locks in an open transaction,
/// which settling commits; dropping it unsettled rolls back and releases
/// them.
#[derive(Debug)]
pub struct PgBatch {
    store: PgOutboxStore,
    route: String,
    lease: LeaseToken,
    records: Vec<OutboxRecord>,
    hold: Hold,
}

/// How a batch holds its rows.
#[derive(Debug)]
pub(crate) enum Hold {
    /// By the lease token stamped on them (also an empty locked claim,
    /// which holds nothing, and whose token no row carries).
    Lease,
    /// By row locks in an open transaction.
    Locks(LockedRows),
}

impl PgBatch {
    pub(crate) fn new(
        store: PgOutboxStore,
        route: String,
        lease: LeaseToken,
        records: Vec<OutboxRecord>,
        hold: Hold,
    ) -> Self {
        Self {
            store,
            route,
            lease,
            records,
            hold,
        }
    }

    /// The route the rows belong to.
    pub fn route(&self) -> &str {
        &self.route
    }

    /// Whether the rows are held by locks in an open transaction rather
    /// than by a committed lease.
    pub fn is_locked(&self) -> bool {
        matches!(self.hold, Hold::Locks(_))
    }
}

impl ClaimedBatch for PgBatch {
    fn lease(&self) -> LeaseToken {
        self.lease
    }

    fn records(&self) -> &[OutboxRecord] {
        &self.records
    }

    #[instrument(
        skip_all,
        fields(
            db.system = "postgresql",
            outbox.route = %self.route,
            outbox.lease = %self.lease.0,
            settlements = settlements.len(),
        ),
        err
    )]
    async fn settle(self, settlements: Vec<Settlement>) -> Result<SettleReport, StoreError> {
        let columns = OutcomeColumns::new(settlements);
        match self.hold {
            Hold::Locks(locks) => locks.settle(&self.store, columns).await,
            Hold::Lease => settle_leased(&self.store, &self.route, self.lease, columns).await,
        }
    }
}

/// Settles under the lease token: a row swept (and perhaps claimed again)
/// since no longer carries it and is reported lost.
async fn settle_leased(
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
    let mut session = store.session().await.map_err(store_error)?;
    let query = query.persistent(store.persistent());
    let rows = query.fetch_all(&mut *session).await.map_err(store_error)?;
    session.finish().await.map_err(store_error)?;
    columns.report(rows)
}
