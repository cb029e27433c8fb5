//! Every filter, update and pipeline document the store sends, each built
//! by one named function; the inbox's are in [`inbox`].

use std::collections::BTreeMap;

use mongodb::bson::{Bson, Document, doc};
use tidings_core::{FailedFilter, LeaseToken};
use uuid::Uuid;

use crate::schema::{field, status, uuid, uuids};

mod inbox;

pub(crate) use inbox::{
    attempt_count, attempts_older, consumers_pipeline, inbox_insert, inbox_key, inbox_older,
};

/// Documents of these events, per route: what staging skips. One route,
/// the usual case, is asked without `$or`, a shape the test stand-in
/// answers from the `(route, event_id)` index rather than a scan.
pub(crate) fn stored_events(by_route: &BTreeMap<&str, Vec<Uuid>>) -> Document {
    let mut any: Vec<Document> = by_route
        .iter()
        .map(|(route, ids)| doc! { field::ROUTE: *route, field::EVENT_ID: { "$in": uuids(ids) } })
        .collect();
    match any.len() {
        1 => any.remove(0),
        _ => doc! { "$or": any },
    }
}

/// Only the route and event id.
pub(crate) fn route_and_event_id() -> Document {
    doc! { "_id": 0, field::ROUTE: 1, field::EVENT_ID: 1 }
}

/// Pending documents of a route that are due: claim candidates.
pub(crate) fn claimable(route: &str, now: i64) -> Document {
    doc! {
        field::ROUTE: route,
        field::STATUS: status::PENDING,
        field::AVAILABLE_AT: { "$lte": now },
    }
}

/// Claim order: creation order, or hybrid-clock order first where the
/// route asks for it.
pub(crate) fn claim_order(hlc_ordering: bool) -> Document {
    if hlc_ordering {
        doc! { field::HLC: 1, field::SEQ: 1 }
    } else {
        doc! { field::SEQ: 1 }
    }
}

/// Only the `_id`, for candidate lists.
pub(crate) fn id_only() -> Document {
    doc! { "_id": 1 }
}

/// Only the event id, for reading which documents a lease holds.
pub(crate) fn event_id_only() -> Document {
    doc! { "_id": 0, field::EVENT_ID: 1 }
}

/// What the per-key scan needs of each unfinished document.
pub(crate) fn key_scan_fields() -> Document {
    doc! { "_id": 1, field::ORDERING_KEY: 1, field::STATUS: 1, field::AVAILABLE_AT: 1 }
}

/// Pending or in-flight documents of a route: the ones that hold back their
/// ordering key.
pub(crate) fn unfinished(route: &str) -> Document {
    doc! {
        field::ROUTE: route,
        field::STATUS: { "$in": [status::PENDING, status::IN_FLIGHT] },
    }
}

/// The chosen candidates, still pending and due: a concurrent claim that
/// took one first leaves it out.
pub(crate) fn still_claimable(ids: Vec<Bson>, now: i64) -> Document {
    doc! {
        "_id": { "$in": ids },
        field::STATUS: status::PENDING,
        field::AVAILABLE_AT: { "$lte": now },
    }
}

/// The candidates read, still pending and due, and not claimed since they
/// were read: each group's attempt counter (which every claim raises)
/// still as read. A group without a counter is fenced on status alone.
pub(crate) fn unclaimed_since_read(groups: Vec<(Option<Bson>, Vec<Bson>)>, now: i64) -> Document {
    let mut clauses: Vec<Document> = groups
        .into_iter()
        .map(|(counter, ids)| {
            let mut clause = doc! { "_id": { "$in": ids } };
            if let Some(counter) = counter {
                clause.insert(field::ATTEMPTS_STARTED, counter);
            }
            clause
        })
        .collect();
    let mut filter = match clauses.len() {
        1 => clauses.remove(0),
        _ => doc! { "$or": clauses },
    };
    filter.insert(field::STATUS, status::PENDING);
    filter.insert(field::AVAILABLE_AT, doc! { "$lte": now });
    filter
}

/// Stamps a claim: in flight under the lease until it expires, one more
/// attempt started.
pub(crate) fn stamp_claim(lease: LeaseToken, expires_at: i64) -> Document {
    doc! {
        "$set": {
            field::STATUS: status::IN_FLIGHT,
            field::LEASE: uuid(lease.0),
            field::LEASE_EXPIRES_AT: expires_at,
        },
        "$inc": { field::ATTEMPTS_STARTED: 1 },
    }
}

/// Documents stamped with a lease.
pub(crate) fn leased(lease: LeaseToken) -> Document {
    doc! { field::LEASE: uuid(lease.0) }
}

/// These events of a route, still in flight under the lease: the fence of
/// every mark. The lease leads: a server that plans by the first field
/// (the test stand-in does) then reads the lease index instead of the
/// whole collection; MongoDB's planner is indifferent to the order.
pub(crate) fn held(route: &str, lease: LeaseToken, ids: &[Uuid]) -> Document {
    doc! {
        field::LEASE: uuid(lease.0),
        field::EVENT_ID: { "$in": uuids(ids) },
        field::STATUS: status::IN_FLIGHT,
        field::ROUTE: route,
    }
}

/// These events of a route, whatever their state.
pub(crate) fn events(route: &str, ids: &[Uuid]) -> Document {
    doc! { field::ROUTE: route, field::EVENT_ID: { "$in": uuids(ids) } }
}

/// What tells whether a settlement's write reached a document.
pub(crate) fn settled_fields() -> Document {
    doc! {
        "_id": 0,
        field::EVENT_ID: 1,
        field::STATUS: 1,
        field::AVAILABLE_AT: 1,
        field::LAST_ERROR: 1,
    }
}

/// Marks settled documents published and keeps them.
pub(crate) fn mark_published(now: i64) -> Document {
    doc! {
        "$set": { field::STATUS: status::PUBLISHED, field::FINISHED_AT: now },
        "$unset": release(),
        "$inc": { field::ATTEMPTS_FINISHED: 1 },
    }
}

/// Returns settled documents to pending, invisible until `available_at`.
pub(crate) fn mark_retry(available_at: i64, error: &str) -> Document {
    doc! {
        "$set": {
            field::STATUS: status::PENDING,
            field::AVAILABLE_AT: available_at,
            field::LAST_ERROR: error,
        },
        "$unset": release(),
        "$inc": { field::ATTEMPTS_FINISHED: 1 },
    }
}

/// Marks settled documents failed with the reason.
pub(crate) fn mark_failed(now: i64, reason: &str) -> Document {
    doc! {
        "$set": {
            field::STATUS: status::FAILED,
            field::FINISHED_AT: now,
            field::LAST_ERROR: reason,
        },
        "$unset": release(),
        "$inc": { field::ATTEMPTS_FINISHED: 1 },
    }
}

/// The lease fields, for `$unset`.
fn release() -> Document {
    doc! { field::LEASE: "", field::LEASE_EXPIRES_AT: "" }
}

/// One document, still under the lease.
pub(crate) fn id_under_lease(id: &Bson, lease: LeaseToken) -> Document {
    doc! { "_id": id.clone(), field::LEASE: uuid(lease.0) }
}

/// Fails an unreadable document with the reason; touches no field whose
/// shape may be the problem beyond those it sets.
pub(crate) fn park_unreadable(now: i64, reason: &str) -> Document {
    doc! {
        "$set": {
            field::STATUS: status::FAILED,
            field::FINISHED_AT: now,
            field::LAST_ERROR: format!("unreadable document: {reason}"),
        },
        "$unset": release(),
    }
}

/// A route's pending documents whose attempt counter is not a number, so
/// no claim can count an attempt on them.
pub(crate) fn uncountable(route: &str) -> Document {
    doc! {
        field::ROUTE: route,
        field::STATUS: status::PENDING,
        field::ATTEMPTS_STARTED: { "$exists": true, "$not": { "$type": "number" } },
    }
}

/// One document, still pending.
pub(crate) fn pending_id(id: &Bson) -> Document {
    doc! { "_id": id.clone(), field::STATUS: status::PENDING }
}

/// Returns a claim's documents to pending as if never claimed.
pub(crate) fn unclaim(now: i64) -> Document {
    doc! {
        "$set": { field::STATUS: status::PENDING, field::AVAILABLE_AT: now },
        "$unset": release(),
        "$inc": { field::ATTEMPTS_STARTED: -1 },
    }
}

/// In-flight documents of a route whose lease has expired.
pub(crate) fn expired(route: &str, now: i64) -> Document {
    doc! {
        field::ROUTE: route,
        field::STATUS: status::IN_FLIGHT,
        field::LEASE_EXPIRES_AT: { "$lte": now },
    }
}

/// The chosen expired documents, still in flight and expired.
pub(crate) fn still_expired(ids: Vec<Bson>, now: i64) -> Document {
    doc! {
        "_id": { "$in": ids },
        field::STATUS: status::IN_FLIGHT,
        field::LEASE_EXPIRES_AT: { "$lte": now },
    }
}

/// Returns swept documents to pending, claimable at once; their attempt
/// counters keep the crash.
pub(crate) fn sweep(now: i64) -> Document {
    doc! {
        "$set": { field::STATUS: status::PENDING, field::AVAILABLE_AT: now },
        "$unset": release(),
    }
}

/// Failed documents of a route, all or these events.
pub(crate) fn failed(route: &str, ids: Option<&[Uuid]>) -> Document {
    let mut filter = doc! { field::ROUTE: route, field::STATUS: status::FAILED };
    if let Some(ids) = ids {
        filter.insert(field::EVENT_ID, doc! { "$in": uuids(ids) });
    }
    filter
}

/// Requeues failed documents with fresh attempt counters.
pub(crate) fn requeue(now: i64) -> Document {
    doc! {
        "$set": {
            field::STATUS: status::PENDING,
            field::AVAILABLE_AT: now,
            field::ATTEMPTS_STARTED: 0_i32,
            field::ATTEMPTS_FINISHED: 0_i32,
        },
        "$unset": { field::FINISHED_AT: "" },
    }
}

/// Finished documents of a route with `status`, finished at or before
/// `cutoff`.
pub(crate) fn finished_before(route: &str, status: &str, cutoff: i64) -> Document {
    doc! {
        field::ROUTE: route,
        field::STATUS: status,
        field::FINISHED_AT: { "$lte": cutoff },
    }
}

/// Documents by `_id`.
pub(crate) fn ids_in(ids: Vec<Bson>) -> Document {
    doc! { "_id": { "$in": ids } }
}

/// Counts a route's documents per status, with the oldest staging time of
/// each.
pub(crate) fn stats_pipeline(route: &str) -> Vec<Document> {
    vec![
        doc! { "$match": { field::ROUTE: route } },
        doc! { "$group": {
            "_id": format!("${}", field::STATUS),
            "count": { "$sum": 1 },
            "oldest": { "$min": format!("${}", field::OCCURRED_AT) },
        } },
    ]
}

/// Failed documents of a route matching an operator's filter, `cutoff` the
/// latest failure time in microseconds.
pub(crate) fn failed_matching(route: &str, filter: &FailedFilter, cutoff: i64) -> Document {
    let mut found = doc! {
        field::ROUTE: route,
        field::STATUS: status::FAILED,
        field::FINISHED_AT: { "$lte": cutoff },
    };
    if let Some(event_type) = &filter.event_type {
        found.insert(field::EVENT_TYPE, event_type);
    }
    if let Some(ids) = &filter.ids {
        found.insert(field::EVENT_ID, doc! { "$in": uuids(ids) });
    }
    found
}

/// Oldest failure first.
pub(crate) fn failure_order() -> Document {
    doc! { field::FINISHED_AT: 1, field::SEQ: 1 }
}

/// The record of one route, keyed by its name.
pub(crate) fn route_record(route: &str) -> Document {
    doc! { "_id": route }
}

/// Records a route only when it is new: an upsert that matches an
/// existing record changes nothing.
pub(crate) fn route_insert(now: i64) -> Document {
    doc! { "$setOnInsert": { field::FIRST_STAGED_AT: now } }
}

/// The change stream's pipeline: inserts only, which is what staging does,
/// without the inserted documents (the event's `_id` stays: it is the
/// resume token).
pub(crate) fn inserts() -> Vec<Document> {
    vec![
        doc! { "$match": { "operationType": "insert" } },
        doc! { "$project": { "operationType": 1 } },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_only_takes_documents_still_pending_and_due() {
        let filter = still_claimable(vec![Bson::Int32(1)], 42);
        assert_eq!(filter.get_str(field::STATUS), Ok(status::PENDING));
        assert_eq!(
            filter.get_document(field::AVAILABLE_AT).unwrap(),
            &doc! { "$lte": 42_i64 }
        );
    }

    #[test]
    fn a_stamp_is_fenced_on_each_counter_as_read() {
        let one = unclaimed_since_read(vec![(Some(Bson::Int32(0)), vec![Bson::Int32(1)])], 5);
        assert_eq!(one.get_i32(field::ATTEMPTS_STARTED), Ok(0));
        assert_eq!(one.get_str(field::STATUS), Ok(status::PENDING));
        let two = unclaimed_since_read(
            vec![
                (Some(Bson::Int32(0)), vec![Bson::Int32(1)]),
                (None, vec![Bson::Int32(2)]),
            ],
            5,
        );
        let clauses = two.get_array("$or").unwrap();
        assert_eq!(clauses.len(), 2);
        assert_eq!(
            clauses[1],
            Bson::Document(doc! { "_id": { "$in": [2] } }),
            "an unreadable counter is not fenced on"
        );
        assert_eq!(
            two.get_document(field::AVAILABLE_AT),
            Ok(&doc! { "$lte": 5_i64 })
        );
    }

    #[test]
    fn marks_are_fenced_on_the_lease_and_release_it() {
        let lease = LeaseToken::new();
        let filter = held("r", lease, &[Uuid::nil()]);
        assert_eq!(filter.get(field::LEASE), Some(&uuid(lease.0)));
        assert_eq!(filter.get_str(field::STATUS), Ok(status::IN_FLIGHT));
        for update in [mark_published(1), mark_retry(2, "e"), mark_failed(3, "r")] {
            let unset = update.get_document("$unset").unwrap();
            assert!(
                unset.contains_key(field::LEASE) && unset.contains_key(field::LEASE_EXPIRES_AT)
            );
            assert_eq!(
                update.get_document("$inc").unwrap(),
                &doc! { field::ATTEMPTS_FINISHED: 1 }
            );
        }
    }

    #[test]
    fn hlc_order_sorts_by_stamp_then_creation() {
        let order = claim_order(true);
        let keys: Vec<_> = order.keys().map(String::as_str).collect();
        assert_eq!(keys, [field::HLC, field::SEQ]);
        assert_eq!(claim_order(false), doc! { field::SEQ: 1 });
    }

    #[test]
    fn stored_events_ask_per_route() {
        let by_route = BTreeMap::from([("a", vec![Uuid::nil()]), ("b", vec![Uuid::max()])]);
        let filter = stored_events(&by_route);
        assert_eq!(filter.get_array("$or").unwrap().len(), 2);
        let one = stored_events(&BTreeMap::from([("a", vec![Uuid::nil()])]));
        assert_eq!(one.get_str(field::ROUTE), Ok("a"));
        assert!(!one.contains_key("$or"));
    }
}
