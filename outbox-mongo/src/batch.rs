//! A leased batch and its settlement, fenced on the lease in one short
//! transaction.

use std::collections::{BTreeMap, HashSet};

use futures::{FutureExt, TryStreamExt};
use mongodb::ClientSession;
use mongodb::bson::Document;
use mongodb::error::Result as MongoResult;
use tidings_core::{
    ClaimedBatch, LeaseToken, OutboxRecord, Outcome, SettleReport, Settlement, StoreError,
};
use tracing::{instrument, warn};
use uuid::Uuid;

use crate::MongoOutboxStore;
use crate::document::event_id;
use crate::error::store_error;
use crate::filters;
use crate::schema::{micros, micros_after};
use crate::txn::retrying;

/// How often a settlement runs again when a sweep touched its documents
/// meanwhile.
const SETTLE_ATTEMPTS: u32 = 5;

/// Documents claimed under one lease. The claim is committed; settling
/// writes under the lease token, and a sweep may hand the documents to
/// another relay once the lease expires.
#[derive(Debug)]
pub struct MongoBatch {
    store: MongoOutboxStore,
    route: String,
    lease: LeaseToken,
    records: Vec<OutboxRecord>,
}

impl MongoBatch {
    pub(crate) fn new(
        store: MongoOutboxStore,
        route: String,
        lease: LeaseToken,
        records: Vec<OutboxRecord>,
    ) -> Self {
        Self {
            store,
            route,
            lease,
            records,
        }
    }

    /// The route the documents belong to.
    pub fn route(&self) -> &str {
        &self.route
    }
}

impl ClaimedBatch for MongoBatch {
    fn lease(&self) -> LeaseToken {
        self.lease
    }

    fn records(&self) -> &[OutboxRecord] {
        &self.records
    }

    #[instrument(
        skip_all,
        fields(
            db.system = "mongodb",
            outbox.route = %self.route,
            outbox.lease = %self.lease.0,
            settlements = settlements.len(),
        ),
        err
    )]
    async fn settle(self, settlements: Vec<Settlement>) -> Result<SettleReport, StoreError> {
        let plan = Plan::new(settlements);
        if plan.ids.is_empty() {
            return Ok(SettleReport::default());
        }
        let (store, route, lease) = (self.store.clone(), self.route.clone(), self.lease);
        let held = retrying(self.store.client(), SETTLE_ATTEMPTS, |session| {
            let (store, route, plan) = (store.clone(), route.clone(), plan.clone());
            async move { apply(&store, &route, lease, &plan, session).await }.boxed()
        })
        .await
        .map_err(store_error)?;
        let report = plan.report(&held);
        if !report.lost.is_empty() {
            warn!(lost = report.lost.len(), "lease lost; marks refused");
        }
        Ok(report)
    }
}

/// The settlements, each event once (the first outcome given wins).
#[derive(Debug, Clone, Default)]
struct Plan {
    ids: Vec<Uuid>,
    outcomes: Vec<Outcome>,
}

impl Plan {
    fn new(settlements: Vec<Settlement>) -> Self {
        let mut seen = HashSet::with_capacity(settlements.len());
        let mut plan = Self::default();
        for Settlement { event_id, outcome } in settlements {
            if seen.insert(event_id) {
                plan.ids.push(event_id);
                plan.outcomes.push(outcome);
            }
        }
        plan
    }

    fn report(&self, held: &HashSet<Uuid>) -> SettleReport {
        let mut report = SettleReport::default();
        for (id, outcome) in self.ids.iter().zip(&self.outcomes) {
            if !held.contains(id) {
                report.lost.push(*id);
                continue;
            }
            match outcome {
                Outcome::Published => report.published += 1,
                Outcome::Retry { .. } => report.rescheduled += 1,
                Outcome::Failed { .. } => report.failed += 1,
            }
        }
        report
    }
}

/// Reads which documents the lease still holds, then writes each group of
/// like outcomes with one operation fenced on the lease. In the
/// transaction, a sweep that touched a held document after the read makes
/// the write conflict and the whole settlement run again.
async fn apply(
    store: &MongoOutboxStore,
    route: &str,
    lease: LeaseToken,
    plan: &Plan,
    session: &mut ClientSession,
) -> MongoResult<HashSet<Uuid>> {
    let held: Vec<Document> = store
        .outbox()
        .find(filters::held(route, lease, &plan.ids))
        .projection(filters::event_id_only())
        .session(&mut *session)
        .await?
        .stream(&mut *session)
        .try_collect()
        .await?;
    let held: HashSet<Uuid> = held.iter().filter_map(event_id).collect();
    let now = store.now();
    let mut groups: BTreeMap<Group, Vec<Uuid>> = BTreeMap::new();
    for (id, outcome) in plan.ids.iter().zip(&plan.outcomes) {
        if held.contains(id) {
            groups.entry(Group::of(outcome, now)).or_default().push(*id);
        }
    }
    for (group, ids) in groups {
        let filter = filters::held(route, lease, &ids);
        let outbox = store.outbox();
        match group {
            Group::Published if store.delete_on_publish() => {
                outbox.delete_many(filter).session(&mut *session).await?;
                continue;
            }
            Group::Published => {
                let update = filters::mark_published(micros(now));
                outbox
                    .update_many(filter, update)
                    .session(&mut *session)
                    .await?;
            }
            Group::Retry {
                available_at,
                error,
            } => {
                let update = filters::mark_retry(available_at, &error);
                outbox
                    .update_many(filter, update)
                    .session(&mut *session)
                    .await?;
            }
            Group::Failed { reason } => {
                let update = filters::mark_failed(micros(now), &reason);
                outbox
                    .update_many(filter, update)
                    .session(&mut *session)
                    .await?;
            }
        }
    }
    Ok(held)
}

/// Outcomes written by one operation.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Group {
    Published,
    Retry { available_at: i64, error: String },
    Failed { reason: String },
}

impl Group {
    fn of(outcome: &Outcome, now: std::time::SystemTime) -> Self {
        match outcome {
            Outcome::Published => Self::Published,
            Outcome::Retry { delay, error } => Self::Retry {
                available_at: micros_after(now, *delay),
                error: error.clone(),
            },
            Outcome::Failed { reason } => Self::Failed {
                reason: reason.clone(),
            },
        }
    }
}
