//! A leased batch and its settlement, fenced on the lease (see
//! [`crate::settle`]).

use std::time::{Duration, SystemTime};

use futures::FutureExt;
use tidings_core::{
    ClaimedBatch, ClaimedRows, LeaseToken, OutboxRecord, SettleReport, Settlement, StoreError,
};
use tracing::warn;

use crate::MongoOutboxStore;
use crate::error::store_error;
use crate::rerun::retrying;
use crate::settle::{Plan, write_directly, write_in_transaction};

/// How often a settlement in a transaction runs again when a sweep touched
/// its documents meanwhile.
const SETTLE_ATTEMPTS: u32 = 5;
/// How long before its lease expires a batch is settled in a transaction
/// rather than with plain fenced writes: room for the writes to land and
/// for clocks of relays on other hosts to run somewhat ahead.
const SETTLE_MARGIN: Duration = Duration::from_secs(1);

/// Documents claimed under one lease. The claim is committed; settling
/// writes under the lease token, and a sweep may hand the documents to
/// another relay once the lease expires.
#[derive(Debug)]
pub struct MongoBatch {
    store: MongoOutboxStore,
    route: String,
    rows: ClaimedRows,
    /// No later than the lease's expiry as stamped.
    lease_until: SystemTime,
}

impl MongoBatch {
    pub(crate) fn new(
        store: MongoOutboxStore,
        route: String,
        lease: (LeaseToken, SystemTime),
        records: Vec<OutboxRecord>,
    ) -> Self {
        Self {
            store,
            route,
            rows: ClaimedRows::new(lease.0, records),
            lease_until: lease.1,
        }
    }

    /// The route the documents belong to.
    pub fn route(&self) -> &str {
        &self.route
    }

    /// Whether no sweep can have taken the batch yet, by this store's
    /// clock, with [`SETTLE_MARGIN`] to spare.
    fn lease_is_safe(&self) -> bool {
        self.store.now() + SETTLE_MARGIN < self.lease_until
    }
}

impl ClaimedBatch for MongoBatch {
    fn rows(&self) -> &ClaimedRows {
        &self.rows
    }

    fn rows_mut(&mut self) -> &mut ClaimedRows {
        &mut self.rows
    }

    async fn settle(self, settlements: Vec<Settlement>) -> Result<SettleReport, StoreError> {
        let plan = Plan::new(settlements);
        if plan.ids.is_empty() {
            return Ok(SettleReport::default());
        }
        let (store, route, lease) = (&self.store, self.route.as_str(), self.rows.lease);
        let held =
            match self.lease_is_safe() {
                true => write_directly(store, route, lease, &plan).await,
                false => retrying(store.client(), SETTLE_ATTEMPTS, |session| {
                    let (store, route, plan) = (store.clone(), route.to_owned(), plan.clone());
                    async move { write_in_transaction(&store, &route, lease, &plan, session).await }
                        .boxed()
                })
                .await,
            }
            .map_err(store_error)?;
        let report = plan.report(&held);
        if !report.lost.is_empty() {
            warn!(lost = report.lost.len(), "lease lost; marks refused");
        }
        Ok(report)
    }
}
