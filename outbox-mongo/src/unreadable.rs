//! Documents the store cannot read or count an attempt on: failed in place
//! with the reason, kept for an operator to repair and requeue, and
//! reported as [`StoreError::Corrupt`] naming the event. The rest of the
//! claim returns to pending as if never claimed, so the next claim goes on.

use mongodb::bson::{Bson, Document};
use mongodb::error::Error as MongoError;
use tidings_core::{LeaseToken, StoreError};
use tracing::error;
use uuid::Uuid;

use crate::MongoOutboxStore;
use crate::document::event_id;
use crate::error::store_error;
use crate::filters;
use crate::read::read_all;
use crate::schema::{field, micros};

/// How many documents with an uncountable attempt counter one claim sets
/// aside at most.
const SET_ASIDE_LIMIT: i64 = 100;

/// Fails the unreadable documents of a claim in place and returns the rest
/// to pending. Returns the first document's error.
pub(crate) async fn set_aside(
    store: &MongoOutboxStore,
    lease: LeaseToken,
    unreadable: Vec<(&Document, StoreError)>,
) -> StoreError {
    let now = micros(store.now());
    let mut first = None;
    for (document, error) in unreadable {
        if let Some(id) = document.get("_id") {
            park(store, filters::id_under_lease(id, lease), &error, now).await;
        }
        first.get_or_insert(error);
    }
    unclaim(store, lease, now).await;
    first.unwrap_or_else(|| StoreError::Corrupt {
        event_id: Uuid::nil(),
        reason: "unreadable document".into(),
    })
}

/// After a stamp refused because a document's attempt counter is not a
/// number: fails those documents, returns whatever the stamp did claim to
/// pending, and reports the first. Without such a document, the stamp's
/// error is reported as it is.
pub(crate) async fn set_aside_unstampable(
    store: &MongoOutboxStore,
    route: &str,
    lease: LeaseToken,
    stamp_error: MongoError,
) -> StoreError {
    let now = micros(store.now());
    unclaim(store, lease, now).await;
    let found: Result<Vec<Document>, MongoError> = read_all(
        store
            .outbox()
            .find(filters::uncountable(route))
            .limit(SET_ASIDE_LIMIT),
    )
    .await;
    let documents = match found {
        Ok(documents) if !documents.is_empty() => documents,
        Ok(_) => return store_error(stamp_error),
        Err(e) => return store_error(e),
    };
    let mut first = None;
    for document in &documents {
        let kind = document
            .get(field::ATTEMPTS_STARTED)
            .map_or(mongodb::bson::spec::ElementType::Null, Bson::element_type);
        let error = StoreError::Corrupt {
            event_id: event_id(document).unwrap_or(Uuid::nil()),
            reason: format!(
                "field {:?} holds {kind:?}, expected an integer",
                field::ATTEMPTS_STARTED
            ),
        };
        if let Some(id) = document.get("_id") {
            park(store, filters::pending_id(id), &error, now).await;
        }
        first.get_or_insert(error);
    }
    first.unwrap_or_else(|| store_error(stamp_error))
}

/// Fails one document with the error as its reason.
async fn park(store: &MongoOutboxStore, filter: Document, error: &StoreError, now: i64) {
    error!(error = %error, "unreadable outbox document failed; repair it and requeue it");
    let update = filters::park_unreadable(now, &error.to_string());
    if let Err(e) = store.outbox().update_one(filter, update).await {
        error!(error = %e, "failing an unreadable document failed");
    }
}

/// Returns the documents a claim stamped to pending, as if never claimed.
async fn unclaim(store: &MongoOutboxStore, lease: LeaseToken, now: i64) {
    let returned = store
        .outbox()
        .update_many(filters::leased(lease), filters::unclaim(now))
        .await;
    if let Err(e) = returned {
        error!(error = %e, "returning a claim to pending failed; a sweep will");
    }
}
