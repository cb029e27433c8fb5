//! Claiming a batch: stamp a fresh lease on a whole batch in a few round
//! trips, never on a document another relay holds.

use std::collections::HashSet;
use std::time::SystemTime;

use futures::{FutureExt, TryStreamExt};
use mongodb::ClientSession;
use mongodb::bson::{Bson, Document};
use mongodb::error::Result as MongoResult;
use tidings_core::{ClaimRequest, LeaseToken, OrderingMode, Route};

use crate::MongoOutboxStore;
use crate::error::TRANSIENT_TRANSACTION_ERROR;
use crate::filters;
use crate::schema::{field, int64, micros, micros_after, status};
use crate::txn::retrying;

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
        OrderingMode::PerKey => claim_per_key(store, request, lease).await?,
    };
    if !claimed {
        return Ok(Vec::new());
    }
    store
        .outbox()
        .find(filters::leased(lease))
        .sort(filters::claim_order(request.route.hlc_ordering))
        .await?
        .try_collect()
        .await
}

/// Finds the oldest due candidates, then stamps those still pending with
/// one `update_many`: a document a concurrent claim took first no longer
/// matches, so none is claimed twice. Returns whether any was stamped.
async fn claim_unordered(
    store: &MongoOutboxStore,
    request: &ClaimRequest<'_>,
    lease: LeaseToken,
) -> MongoResult<bool> {
    let route = request.route;
    for _ in 0..UNORDERED_ROUNDS {
        let now = store.now();
        let candidates: Vec<Document> = store
            .outbox()
            .find(filters::claimable(&route.name, micros(now)))
            .sort(filters::claim_order(route.hlc_ordering))
            .limit(int64(request.limit))
            .projection(filters::id_only())
            .await?
            .try_collect()
            .await?;
        let ids = ids_of(&candidates);
        if ids.is_empty() {
            return Ok(false);
        }
        let stamped = store
            .outbox()
            .update_many(
                filters::still_claimable(ids, micros(now)),
                stamp(request, lease, now),
            )
            .await?;
        if stamped.modified_count > 0 {
            return Ok(true);
        }
    }
    Ok(false)
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

fn stamp(request: &ClaimRequest<'_>, lease: LeaseToken, now: SystemTime) -> Document {
    filters::stamp_claim(lease, micros_after(now, request.lease))
}

fn ids_of(documents: &[Document]) -> Vec<Bson> {
    documents
        .iter()
        .filter_map(|d| d.get("_id").cloned())
        .collect()
}
