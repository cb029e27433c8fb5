//! Settling a leased batch: each group of like outcomes written with one
//! operation fenced on the lease, so a settlement never touches a document
//! another relay holds.
//!
//! While the lease is comfortably unexpired no sweep may take the batch, so
//! the writes go out on their own, one round trip per group (one in all
//! when every event was published), and their counts tell whether the
//! lease still held every document. Near or past expiry a sweep and a new
//! claim may race the settlement; it then reads what the lease still holds
//! and writes in one transaction, so the lost documents it reports are
//! exactly those it did not touch.
//!
//! With the two-round-trip claim (see [`crate::claim`]) this took the
//! backlog drain (`tidings-bench mongo-drain-noop`) from 0.27–0.30 of the
//! raw driver's claim-and-delete loop to 0.65–0.85 on the test stand-in.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::SystemTime;

use futures::TryStreamExt;
use mongodb::ClientSession;
use mongodb::bson::Document;
use mongodb::error::Result as MongoResult;
use tidings_core::{LeaseToken, Outcome, SettleReport, Settlement};
use tracing::warn;
use uuid::Uuid;

use crate::MongoOutboxStore;
use crate::document::event_id;
use crate::filters;
use crate::read::read_all;
use crate::schema::{field, micros, micros_after, status};

/// The settlements, each event once (the first outcome given wins).
#[derive(Debug, Clone, Default)]
pub(crate) struct Plan {
    pub(crate) ids: Vec<Uuid>,
    outcomes: Vec<Outcome>,
}

impl Plan {
    pub(crate) fn new(settlements: Vec<Settlement>) -> Self {
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

    /// The report, given the events the lease held when written.
    pub(crate) fn report(&self, held: &HashSet<Uuid>) -> SettleReport {
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

    /// The events grouped by the operation that writes them.
    fn groups(&self, only: Option<&HashSet<Uuid>>, now: SystemTime) -> BTreeMap<Group, Vec<Uuid>> {
        let mut groups: BTreeMap<Group, Vec<Uuid>> = BTreeMap::new();
        for (id, outcome) in self.ids.iter().zip(&self.outcomes) {
            if only.is_none_or(|held| held.contains(id)) {
                groups.entry(Group::of(outcome, now)).or_default().push(*id);
            }
        }
        groups
    }
}

/// Writes every group without a transaction; returns the events the lease
/// held. Meant for a lease no sweep can have taken yet: when a write
/// matches fewer documents than its group (a sweep on a clock far ahead,
/// an operator's hand), the group's documents are read to tell which the
/// write left alone.
pub(crate) async fn write_directly(
    store: &MongoOutboxStore,
    route: &str,
    lease: LeaseToken,
    plan: &Plan,
) -> MongoResult<HashSet<Uuid>> {
    let mut held = HashSet::with_capacity(plan.ids.len());
    for (group, ids) in plan.groups(None, store.now()) {
        let written = write(store, route, lease, &group, &ids, None).await?;
        if written == ids.len() as u64 {
            held.extend(ids);
            continue;
        }
        warn!(
            written,
            of = ids.len(),
            "an unexpired lease held fewer documents than claimed"
        );
        held.extend(written_by(store, route, &group, &ids).await?);
    }
    Ok(held)
}

/// Which of a short group's documents show the group's write: deleted, or
/// marked as it marks them. Another relay that took a document and settled
/// it the same way is indistinguishable.
async fn written_by(
    store: &MongoOutboxStore,
    route: &str,
    group: &Group,
    ids: &[Uuid],
) -> MongoResult<Vec<Uuid>> {
    let found: Vec<Document> = read_all(
        store
            .outbox()
            .find(filters::events(route, ids))
            .projection(filters::settled_fields()),
    )
    .await?;
    let found: HashMap<Uuid, &Document> = found
        .iter()
        .filter_map(|d| Some((event_id(d)?, d)))
        .collect();
    let deletes = store.delete_on_publish();
    Ok(ids
        .iter()
        .filter(|id| group.shows_on(found.get(id).copied(), deletes))
        .copied()
        .collect())
}

/// In the caller's transaction: reads which documents the lease still
/// holds, then writes each group of like outcomes. A sweep that touches a
/// held document after the read makes the write conflict and the whole
/// settlement run again.
pub(crate) async fn write_in_transaction(
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
    for (group, ids) in plan.groups(Some(&held), store.now()) {
        write(store, route, lease, &group, &ids, Some(&mut *session)).await?;
    }
    Ok(held)
}

/// Writes one group fenced on the lease; returns how many documents it
/// matched.
async fn write(
    store: &MongoOutboxStore,
    route: &str,
    lease: LeaseToken,
    group: &Group,
    ids: &[Uuid],
    session: Option<&mut ClientSession>,
) -> MongoResult<u64> {
    let (filter, outbox) = (filters::held(route, lease, ids), store.outbox());
    let now = micros(store.now());
    let update = match group {
        Group::Published if store.delete_on_publish() => {
            let delete = outbox.delete_many(filter);
            let deleted = match session {
                Some(session) => delete.session(session).await?,
                None => delete.await?,
            };
            return Ok(deleted.deleted_count);
        }
        Group::Published => filters::mark_published(now),
        Group::Retry {
            available_at,
            error,
        } => filters::mark_retry(*available_at, error),
        Group::Failed { reason } => filters::mark_failed(now, reason),
    };
    let update = outbox.update_many(filter, update);
    let updated = match session {
        Some(session) => update.session(session).await?,
        None => update.await?,
    };
    Ok(updated.matched_count)
}

/// Outcomes written by one operation.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Group {
    Published,
    Retry { available_at: i64, error: String },
    Failed { reason: String },
}

impl Group {
    fn of(outcome: &Outcome, now: SystemTime) -> Self {
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

    /// Whether `document` (`None`: absent) looks as this group's write
    /// leaves it.
    fn shows_on(&self, document: Option<&Document>, deletes: bool) -> bool {
        let Some(d) = document else {
            return deletes && *self == Self::Published;
        };
        let (state, error) = (d.get_str(field::STATUS), d.get_str(field::LAST_ERROR));
        match self {
            Self::Published => !deletes && state == Ok(status::PUBLISHED),
            Self::Retry {
                available_at,
                error: wrote,
            } => {
                state == Ok(status::PENDING)
                    && d.get_i64(field::AVAILABLE_AT) == Ok(*available_at)
                    && error == Ok(wrote.as_str())
            }
            Self::Failed { reason } => state == Ok(status::FAILED) && error == Ok(reason.as_str()),
        }
    }
}
