//! Collections, indexes and documents the store did not write: hostile
//! names are refused, missing indexes named, unreadable documents reported
//! by event and kept.

use crate::support::{ORDER_EVENTS, collection_name, database, documents, drop_collections, store};
use mongodb::bson::{Document, doc};
use tidings_core::{ClaimedBatch, OutboxStore, Requeue, StoreError};
use tidings_mongo::{MongoOutboxOptions, MongoOutboxStore, Retention};
use tidings_testing::store::try_claim;
use uuid::Uuid;

#[tokio::test]
async fn hostile_collection_names_are_refused_with_the_reason() {
    let database = database().await;
    let long = "x".repeat(65);
    for bad in [
        "",
        "$cmd",
        "a\0b",
        "system.users",
        "out box",
        "ü",
        "a..b",
        long.as_str(),
    ] {
        let options = MongoOutboxOptions::new().collection(bad);
        let err = MongoOutboxStore::new(database.clone(), options).unwrap_err();
        assert!(matches!(err, StoreError::Invalid(_)), "{bad:?}: {err}");
        assert!(err.to_string().contains("outbox collection name"), "{err}");
        let options = MongoOutboxOptions::new().inbox_collection(bad);
        let err = MongoOutboxStore::new(database.clone(), options).unwrap_err();
        assert!(err.to_string().contains("inbox collection name"), "{err}");
    }
    let same = MongoOutboxOptions::new()
        .collection("t")
        .inbox_collection("t");
    assert!(MongoOutboxStore::new(database, same).is_err());
}

#[tokio::test]
async fn verify_names_what_is_missing_until_indexes_are_ensured() {
    let options = MongoOutboxOptions::new()
        .collection(collection_name("outbox"))
        .inbox_collection(collection_name("inbox"));
    let store = MongoOutboxStore::new(database().await, options).unwrap();
    let err = store.verify().await.unwrap_err();
    assert!(matches!(err, StoreError::Schema(_)), "{err}");
    let message = err.to_string();
    assert!(message.contains("does not exist"), "{message}");
    assert!(message.contains("ensure_indexes"), "{message}");

    store.ensure_indexes().await.unwrap();
    store.ensure_indexes().await.expect("idempotent");
    store.verify().await.unwrap();

    store.outbox().drop_index("tidings_claim").await.unwrap();
    let message = store.verify().await.unwrap_err().to_string();
    assert!(message.contains("lacks index tidings_claim"), "{message}");
    assert!(!message.contains("tidings_lease"), "{message}");
    drop_collections(&store).await;
}

async fn claim(store: &MongoOutboxStore) -> Result<tidings_mongo::MongoBatch, StoreError> {
    try_claim(store, ORDER_EVENTS.route(), 10).await
}

/// Commits `count` orders with fresh time-ordered ids; returns the ids.
async fn stage_orders(store: &MongoOutboxStore, count: u64) -> Vec<Uuid> {
    let mut ids = Vec::new();
    let mut ctx = store.begin().await.unwrap();
    for n in 0..count {
        let id = Uuid::now_v7();
        ctx.outbox()
            .stage(&ORDER_EVENTS, "order.placed", &n)
            .unwrap()
            .event_id(id);
        ids.push(id);
    }
    ctx.commit().await.unwrap();
    ids
}

/// The filter matching the document of event `id`.
fn by_id(id: Uuid) -> Document {
    doc! { "event_id": mongodb::bson::Binary {
        subtype: mongodb::bson::spec::BinarySubtype::Uuid,
        bytes: id.as_bytes().to_vec(),
    } }
}

#[tokio::test]
async fn unreadable_documents_are_reported_by_event_failed_and_kept() {
    let store = store(Retention::Delete).await;
    let ids = stage_orders(&store, 4).await;
    let damage = [
        doc! { "$unset": { "payload": "" } },
        doc! { "$set": { "event_type": 5 } },
        doc! { "$set": { "headers": "traceparent=1" } },
    ];
    for (id, update) in ids.iter().zip(damage) {
        store.outbox().update_one(by_id(*id), update).await.unwrap();
    }

    let err = claim(&store).await.unwrap_err();
    let message = err.to_string();
    assert!(
        matches!(&err, StoreError::Corrupt { event_id, .. } if *event_id == ids[0]),
        "{message}"
    );
    assert!(message.contains(&ids[0].to_string()), "{message}");
    assert!(message.contains("\"payload\" is missing"), "{message}");

    // The readable event went back to pending and is claimed next, its
    // failed claim not counted as an attempt.
    let batch = claim(&store)
        .await
        .expect("the readable event is claimable");
    assert_eq!(batch.records().len(), 1);
    assert_eq!(batch.records()[0].envelope.event_id, ids[3]);
    assert_eq!(batch.records()[0].attempts_started, 1);

    let stats = store.stats(ORDER_EVENTS.name()).await.unwrap();
    assert_eq!((stats.failed, stats.in_flight, stats.pending), (3, 1, 0));
    assert_eq!(documents(store.outbox()).await, 4, "nothing was lost");
    let kept = store
        .outbox()
        .find_one(by_id(ids[1]))
        .await
        .unwrap()
        .unwrap();
    let reason = kept.get_str("last_error").unwrap();
    assert!(reason.contains("\"event_type\""), "{reason}");

    // Repaired and requeued, it is relayed like any other.
    store
        .outbox()
        .update_one(
            by_id(ids[1]),
            doc! { "$set": { "event_type": "order.placed" } },
        )
        .await
        .unwrap();
    let requeued = store
        .requeue_failed(ORDER_EVENTS.name(), Requeue::Ids(vec![ids[1]]))
        .await
        .unwrap();
    assert_eq!(requeued, 1);
    let batch = claim(&store).await.unwrap();
    assert_eq!(batch.records()[0].envelope.event_id, ids[1]);
    drop_collections(&store).await;
}

#[tokio::test]
async fn a_document_whose_attempt_counter_is_not_a_number_is_set_aside() {
    let store = store(Retention::Delete).await;
    let ids = stage_orders(&store, 3).await;
    let damaged = by_id(ids[1]);
    store
        .outbox()
        .update_one(damaged, doc! { "$set": { "attempts_started": "zero" } })
        .await
        .unwrap();

    let err = claim(&store).await.unwrap_err();
    assert!(
        matches!(&err, StoreError::Corrupt { event_id, reason } if *event_id == ids[1] && reason.contains("attempts_started")),
        "{err}"
    );
    let batch = claim(&store).await.expect("the others are claimable");
    let claimed: Vec<_> = batch
        .records()
        .iter()
        .map(|r| r.envelope.event_id)
        .collect();
    assert_eq!(claimed, [ids[0], ids[2]]);
    assert!(batch.records().iter().all(|r| r.attempts_started == 1));
    let stats = store.stats(ORDER_EVENTS.name()).await.unwrap();
    assert_eq!((stats.failed, stats.in_flight), (1, 2));
    assert_eq!(documents(store.outbox()).await, 3, "nothing was lost");
    drop_collections(&store).await;
}
