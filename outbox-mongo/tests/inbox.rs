//! The inbox: marks recorded in the handler's transaction, duplicates
//! reported without breaking it.

mod support;

use std::time::Duration;

use mongodb::bson::doc;
use support::{ORDER_EVENTS, drop_collections, inbox_count, outbox_count, store};
use tidings_core::{InboxError, InboxMark, InboxStore};
use tidings_mongo::Retention;
use uuid::Uuid;

#[tokio::test]
async fn a_duplicate_is_reported_and_leaves_the_transaction_usable() {
    let store = store(Retention::Delete).await;
    let inbox = store.inbox();
    let event = Uuid::now_v7();

    let mut tx = inbox.begin().await.unwrap();
    assert_eq!(
        inbox.mark(&mut tx, "billing", event).await.unwrap(),
        InboxMark::Fresh
    );
    // The handler stages a reaction in the same transaction.
    tx.outbox()
        .stage(&ORDER_EVENTS, "invoice.created", &1)
        .unwrap();
    inbox.commit(tx).await.unwrap();
    assert_eq!(
        (inbox_count(&store).await, outbox_count(&store).await),
        (1, 1)
    );

    let mut tx = inbox.begin().await.unwrap();
    assert_eq!(
        inbox.mark(&mut tx, "billing", event).await.unwrap(),
        InboxMark::Duplicate
    );
    assert_eq!(
        inbox.mark(&mut tx, "shipping", event).await.unwrap(),
        InboxMark::Fresh
    );
    let notes = store
        .database()
        .collection(&format!("{}_notes", store.outbox().name()));
    notes
        .insert_one(doc! { "after": "duplicate" })
        .session(tx.session())
        .await
        .expect("the transaction still works after a duplicate");
    inbox.commit(tx).await.unwrap();
    assert_eq!(inbox_count(&store).await, 2);
    assert_eq!(notes.count_documents(doc! {}).await.unwrap(), 1);
    notes.drop().await.unwrap();
    drop_collections(&store).await;
}

#[tokio::test]
async fn a_rolled_back_mark_leaves_the_event_fresh() {
    let store = store(Retention::Delete).await;
    let inbox = store.inbox();
    let event = Uuid::now_v7();

    let mut tx = inbox.begin().await.unwrap();
    assert_eq!(
        inbox.mark(&mut tx, "billing", event).await.unwrap(),
        InboxMark::Fresh
    );
    tx.outbox()
        .stage(&ORDER_EVENTS, "invoice.created", &1)
        .unwrap();
    inbox.rollback(tx).await.unwrap();

    let mut tx = inbox.begin().await.unwrap();
    assert_eq!(
        inbox.mark(&mut tx, "billing", event).await.unwrap(),
        InboxMark::Fresh
    );
    drop(tx);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        (inbox_count(&store).await, outbox_count(&store).await),
        (0, 0)
    );
    drop_collections(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrent_mark_conflicts_and_a_retry_sees_the_committed_one() {
    let store = store(Retention::Delete).await;
    let inbox = store.inbox();
    let event = Uuid::now_v7();

    let mut first = inbox.begin().await.unwrap();
    assert_eq!(
        inbox.mark(&mut first, "billing", event).await.unwrap(),
        InboxMark::Fresh
    );
    let mut second = inbox.begin().await.unwrap();
    let err = inbox.mark(&mut second, "billing", event).await.unwrap_err();
    assert!(matches!(err, InboxError::Conflict(_)), "{err}");
    assert!(err.is_transient());
    inbox.rollback(second).await.unwrap();

    inbox.commit(first).await.unwrap();
    let mut retry = inbox.begin().await.unwrap();
    assert_eq!(
        inbox.mark(&mut retry, "billing", event).await.unwrap(),
        InboxMark::Duplicate
    );
    inbox.rollback(retry).await.unwrap();
    assert_eq!(inbox_count(&store).await, 1);
    drop_collections(&store).await;
}

#[tokio::test]
async fn old_marks_are_purged_per_consumer_in_batches() {
    let store = store(Retention::Delete).await;
    let inbox = store.inbox();
    let mut tx = inbox.begin().await.unwrap();
    for _ in 0..3 {
        inbox
            .mark(&mut tx, "billing", Uuid::now_v7())
            .await
            .unwrap();
    }
    inbox
        .mark(&mut tx, "shipping", Uuid::now_v7())
        .await
        .unwrap();
    inbox.commit(tx).await.unwrap();

    let hour = Duration::from_secs(3600);
    assert_eq!(
        inbox.purge_older_than("billing", hour, 10).await.unwrap(),
        0
    );
    assert_eq!(
        inbox
            .purge_older_than("billing", Duration::ZERO, 2)
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        inbox
            .purge_older_than("billing", Duration::ZERO, 2)
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        inbox_count(&store).await,
        1,
        "other consumers keep their marks"
    );
    drop_collections(&store).await;
}

#[tokio::test]
async fn hostile_consumer_names_are_refused() {
    let store = store(Retention::Delete).await;
    let inbox = store.inbox();
    let mut tx = inbox.begin().await.unwrap();
    for bad in ["billing'; --", "$where", ""] {
        let err = inbox.mark(&mut tx, bad, Uuid::now_v7()).await.unwrap_err();
        assert!(matches!(err, InboxError::Invalid(_)), "{bad:?}: {err}");
    }
    drop(tx);
    drop_collections(&store).await;
}

/// Remembers the stores it made so their collections go after the case.
struct Mongo(std::sync::Mutex<Vec<tidings_mongo::MongoOutboxStore>>);

impl tidings_testing::inbox::InboxHarness for Mongo {
    type Store = tidings_mongo::MongoInboxStore;

    async fn store(&self) -> tidings_mongo::MongoInboxStore {
        let store = store(Retention::Delete).await;
        self.0.lock().unwrap().push(store.clone());
        store.inbox()
    }

    async fn teardown(&self) {
        let stores = std::mem::take(&mut *self.0.lock().unwrap());
        for store in &stores {
            drop_collections(store).await;
        }
    }
}

mod conformance {
    use super::*;
    tidings_testing::inbox_conformance!(Mongo(Default::default()));
}
