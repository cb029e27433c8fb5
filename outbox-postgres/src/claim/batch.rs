//! A claimed batch, leased or locked, and its settlement.

use tidings_core::{ClaimRequest, ClaimedBatch, ClaimedRows, SettleReport, Settlement, StoreError};
use tokio_util::task::AbortOnDropHandle;
use tracing::Instrument;

use crate::claim::locked::LockedRows;
use crate::claim::outcomes::OutcomeColumns;
use crate::claim::{leased, locked};
use crate::{ClaimMode, PgOutboxStore};

/// Rows claimed by one relay, leased or locked as the store's
/// [`ClaimMode`] says.
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
    rows: ClaimedRows,
    hold: Hold,
}

/// How a batch holds its rows.
#[derive(Debug)]
enum Hold {
    /// By the lease token stamped on them (also an empty locked claim,
    /// which holds nothing, and whose token no row carries).
    Lease,
    /// By row locks in an open transaction.
    Locks(LockedRows),
}

impl PgBatch {
    /// Claims rows as the store's [`ClaimMode`] says, on a task of its own
    /// while the store's locked claims come back full.
    ///
    /// A relay draining a backlog claims its next batch while it publishes
    /// and settles the ones before, all from one task. Run there, the
    /// claim's rows would be read and decoded only between those steps, and
    /// its statement would end later; on a task of its own, a runtime
    /// worker reads them as the server sends them. A claim outside a
    /// backlog takes a few rows, and runs where it is called rather than
    /// pay the hand-over to another task.
    pub(crate) async fn claim(
        store: &PgOutboxStore,
        request: ClaimRequest<'_>,
    ) -> Result<Self, StoreError> {
        if !store.inner().claims.in_backlog() {
            return Self::claim_here(store, request).await;
        }
        let (store, route) = (store.clone(), request.route.clone());
        let (limit, lease, after) = (request.limit, request.lease, request.after);
        let claim = async move {
            let request = ClaimRequest {
                route: &route,
                limit,
                lease,
                after,
            };
            Self::claim_here(&store, request).await
        };
        // Dropped, the claim is dropped with its task: a statement under
        // way ends with its connection, and the rows stay where they were.
        let task = AbortOnDropHandle::new(tokio::spawn(claim.in_current_span()));
        match task.await {
            Ok(claimed) => claimed,
            Err(failed) => match failed.try_into_panic() {
                Ok(panic) => std::panic::resume_unwind(panic),
                Err(cancelled) => Err(StoreError::Backend(cancelled.into())),
            },
        }
    }

    /// Claims rows as the store's [`ClaimMode`] says, on the caller's task.
    async fn claim_here(
        store: &PgOutboxStore,
        request: ClaimRequest<'_>,
    ) -> Result<Self, StoreError> {
        let route = request.route.name.to_string();
        let (lease, records, hold, cursor) = match store.options().get_claim_mode() {
            ClaimMode::Locked => {
                let claimed = locked::claim(store, request).await?;
                let hold = claimed.locks.map_or(Hold::Lease, Hold::Locks);
                (claimed.token, claimed.records, hold, claimed.cursor)
            }
            ClaimMode::Leased => {
                let (lease, records) = leased::claim(store, request).await?;
                (lease, records, Hold::Lease, None)
            }
        };
        Ok(Self {
            store: store.clone(),
            route,
            rows: ClaimedRows::new(lease, records).going_on_past(cursor),
            hold,
        })
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
    fn rows(&self) -> &ClaimedRows {
        &self.rows
    }

    fn rows_mut(&mut self) -> &mut ClaimedRows {
        &mut self.rows
    }

    async fn settle(self, settlements: Vec<Settlement>) -> Result<SettleReport, StoreError> {
        let columns = OutcomeColumns::new(settlements);
        match self.hold {
            Hold::Locks(locks) => locks.settle(&self.store, columns).await,
            Hold::Lease => leased::settle(&self.store, &self.route, self.rows.lease, columns).await,
        }
    }
}
