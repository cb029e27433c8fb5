//! Claiming a batch: stamp a fresh lease on a whole batch in a few round
//! trips, never on a document another relay holds.
//!
//! An unordered claim reads its candidates whole and stamps them; when the
//! stamp took every candidate, the documents read are the batch (with the
//! stamp applied to the copies), so the common claim is two round trips.
//! Only a claim that raced another and took part of its candidates reads
//! the batch back by lease. The stamp is fenced on each candidate's
//! attempt counter as read, which every claim raises: a candidate claimed,
//! settled and made due again in between is left out rather than handed
//! over with stale counters.

use std::collections::HashSet;

use futures::FutureExt;
use mongodb::ClientSession;
use mongodb::bson::{Bson, Document};
use mongodb::error::Result as MongoResult;
use tidings_core::{ClaimRequest, LeaseToken, OrderingMode, Route};

use crate::MongoOutboxStore;
use crate::error::TRANSIENT_TRANSACTION_ERROR;
use crate::filters;
use crate::read::read_all;
use crate::rerun::retrying;
use crate::schema::{field, int64, micros, micros_after, status, uuid};

/// How often an unordered claim looks again when racing relays took every
/// candidate it found.
const UNORDERED_ROUNDS: u32 = 3;
/// Documents the per-key scan reads per round trip: it usually stops
/// early, once it has picked a batch.
const KEY_SCAN_BATCH: u32 = 256;
/// How often a per-key claim runs again when it conflicts with another.
const PER_KEY_ATTEMPTS: u32 = 8;

/// Stamps `lease` on up to `request.limit` claimable documents and returns
/// them in claim order.
pub(crate) async fn claim(
    store: &MongoOutboxStore,
    request: &ClaimRequest<'_>,
    lease: LeaseToken,
) -> MongoResult<Vec<Document>> {
    if request.limit == 0 {
        return Ok(Vec::new());
    }
    let claimed = match request.route.ordering {
        OrderingMode::Unordered => claim_unordered(store, request, lease).await?,
        OrderingMode::PerKey => match claim_per_key(store, request, lease).await? {
            true => Claimed::Partly,
            false => Claimed::Nothing,
        },
    };
    match claimed {
        Claimed::Nothing => Ok(Vec::new()),
        Claimed::All(documents) => Ok(documents),
        Claimed::Partly => read_back(store, request, lease).await,
    }
}

/// What a stamp took.
enum Claimed {
    /// No document.
    Nothing,
    /// Every candidate: these, stamped.
    All(Vec<Document>),
    /// Some documents, to be read back by lease.
    Partly,
}

/// The documents stamped with `lease`, in claim order.
async fn read_back(
    store: &MongoOutboxStore,
    request: &ClaimRequest<'_>,
    lease: LeaseToken,
) -> MongoResult<Vec<Document>> {
    read_all(
        store
            .outbox()
            .find(filters::leased(lease))
            .sort(filters::claim_order(request.route.hlc_ordering)),
    )
    .await
}

/// Reads the oldest due candidates whole, then stamps those still pending
/// and unclaimed since with one `update_many`: a document a concurrent
/// claim took first no longer matches, so none is claimed twice.
async fn claim_unordered(
    store: &MongoOutboxStore,
    request: &ClaimRequest<'_>,
    lease: LeaseToken,
) -> MongoResult<Claimed> {
    let route = request.route;
    for _ in 0..UNORDERED_ROUNDS {
        let now = store.now();
        let mut candidates: Vec<Document> = read_all(
            store
                .outbox()
                .find(filters::claimable(&route.name, micros(now)))
                .sort(filters::claim_order(route.hlc_ordering))
                .limit(int64(request.limit)),
        )
        .await?;
        if candidates.is_empty() {
            return Ok(Claimed::Nothing);
        }
        let expires_at = micros_after(now, request.lease);
        let stamped = store
            .outbox()
            .update_many(
                filters::unclaimed_since_read(by_attempts(&candidates), micros(now)),
                filters::stamp_claim(lease, expires_at),
            )
            .await?;
        if stamped.modified_count == candidates.len() as u64 {
            for d in &mut candidates {
                stamp_copy(d, lease, expires_at);
            }
            return Ok(Claimed::All(candidates));
        }
        if stamped.modified_count > 0 {
            return Ok(Claimed::Partly);
        }
    }
    Ok(Claimed::Nothing)
}

/// The candidates' ids grouped by their attempt counter as read; `None`
/// for a counter that is not a number, which the stamp then does not
/// fence on (its `$inc` refuses such a document, see [`crate::corrupt`]).
fn by_attempts(candidates: &[Document]) -> Vec<(Option<Bson>, Vec<Bson>)> {
    let mut groups: Vec<(Option<Bson>, Vec<Bson>)> = Vec::new();
    for d in candidates {
        let Some(id) = d.get("_id") else { continue };
        let counter = d
            .get(field::ATTEMPTS_STARTED)
            .filter(|c| matches!(c, Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_)))
            .cloned();
        match groups.iter_mut().find(|(c, _)| *c == counter) {
            Some((_, ids)) => ids.push(id.clone()),
            None => groups.push((counter, vec![id.clone()])),
        }
    }
    groups
}

/// Applies [`filters::stamp_claim`] to a copy read before the stamp, as
/// the server applied it to the document.
fn stamp_copy(d: &mut Document, lease: LeaseToken, expires_at: i64) {
    d.insert(field::STATUS, status::IN_FLIGHT);
    d.insert(field::LEASE, uuid(lease.0));
    d.insert(field::LEASE_EXPIRES_AT, expires_at);
    let started = match d.get(field::ATTEMPTS_STARTED) {
        Some(Bson::Int64(n)) => Bson::Int64(n + 1),
        Some(Bson::Double(n)) => Bson::Double(n + 1.0),
        Some(Bson::Int32(n)) => Bson::Int32(n + 1),
        _ => Bson::Int32(1),
    };
    d.insert(field::ATTEMPTS_STARTED, started);
}

/// Picks the oldest unfinished document of each key (and documents
/// without a key) and stamps them, all in one transaction: its snapshot
/// shows every key's state at one moment, and a concurrent claim of the
/// same documents makes one of the two conflict and look again.
async fn claim_per_key(
    store: &MongoOutboxStore,
    request: &ClaimRequest<'_>,
    lease: LeaseToken,
) -> MongoResult<bool> {
    let (route, limit, lease_for) = (request.route, request.limit, request.lease);
    let ran = retrying(store.client(), PER_KEY_ATTEMPTS, |session| {
        let (store, route) = (store.clone(), route.clone());
        async move {
            let now = store.now();
            let ids = pick_per_key(&store, &route, limit, session, micros(now)).await?;
            if ids.is_empty() {
                return Ok(false);
            }
            let stamp = filters::stamp_claim(lease, micros_after(now, lease_for));
            let stamped = store
                .outbox()
                .update_many(filters::still_claimable(ids, micros(now)), stamp)
                .session(&mut *session)
                .await?;
            Ok(stamped.modified_count > 0)
        }
        .boxed()
    })
    .await;
    match ran {
        // Racing relays kept taking these keys; they are in flight anyway.
        Err(e) if e.contains_label(TRANSIENT_TRANSACTION_ERROR) => Ok(false),
        other => other,
    }
}

/// Scans a route's unfinished documents in claim order and picks, per key,
/// the first one if it is pending and due.
async fn pick_per_key(
    store: &MongoOutboxStore,
    route: &Route,
    limit: usize,
    session: &mut ClientSession,
    now: i64,
) -> MongoResult<Vec<Bson>> {
    let mut cursor = store
        .outbox()
        .find(filters::unfinished(&route.name))
        .sort(filters::claim_order(route.hlc_ordering))
        .projection(filters::key_scan_fields())
        .batch_size(KEY_SCAN_BATCH)
        .session(&mut *session)
        .await?;
    let mut keys_seen: HashSet<String> = HashSet::new();
    let mut picked = Vec::new();
    while let Some(d) = cursor.next(&mut *session).await.transpose()? {
        if picked.len() >= limit {
            break;
        }
        if let Ok(key) = d.get_str(field::ORDERING_KEY) {
            if !keys_seen.insert(key.to_owned()) {
                continue;
            }
        }
        let due = d.get_str(field::STATUS) == Ok(status::PENDING)
            && d.get_i64(field::AVAILABLE_AT).is_ok_and(|at| at <= now);
        if let (true, Some(id)) = (due, d.get("_id")) {
            picked.push(id.clone());
        }
    }
    Ok(picked)
}

#[cfg(test)]
mod tests {
    use mongodb::bson::doc;

    use super::*;

    #[test]
    fn candidates_group_by_their_counter_as_read() {
        let candidates = [
            doc! { "_id": 1, field::ATTEMPTS_STARTED: 0 },
            doc! { "_id": 2, field::ATTEMPTS_STARTED: 2 },
            doc! { "_id": 3, field::ATTEMPTS_STARTED: 0 },
            doc! { "_id": 4, field::ATTEMPTS_STARTED: "two" },
        ];
        let groups = by_attempts(&candidates);
        assert_eq!(
            groups,
            vec![
                (Some(Bson::Int32(0)), vec![Bson::Int32(1), Bson::Int32(3)]),
                (Some(Bson::Int32(2)), vec![Bson::Int32(2)]),
                (None, vec![Bson::Int32(4)]),
            ]
        );
    }

    #[test]
    fn a_stamped_copy_counts_the_attempt_as_the_server_does() {
        let lease = LeaseToken::new();
        let mut read = doc! { field::STATUS: status::PENDING, field::ATTEMPTS_STARTED: 1_i64 };
        stamp_copy(&mut read, lease, 7);
        assert_eq!(read.get_str(field::STATUS), Ok(status::IN_FLIGHT));
        assert_eq!(read.get(field::LEASE), Some(&uuid(lease.0)));
        assert_eq!(read.get_i64(field::LEASE_EXPIRES_AT), Ok(7));
        assert_eq!(read.get_i64(field::ATTEMPTS_STARTED), Ok(2));
        let mut fresh = doc! { field::ATTEMPTS_STARTED: 0 };
        stamp_copy(&mut fresh, lease, 7);
        assert_eq!(fresh.get_i32(field::ATTEMPTS_STARTED), Ok(1));
    }
}
