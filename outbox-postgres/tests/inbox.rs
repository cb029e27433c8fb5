//! The inbox: marks recorded in the handler's transaction, duplicates
//! skipped without aborting it.

mod support;

use std::time::Duration;

use sqlx::AssertSqlSafe;
use support::{ORDER_EVENTS, drop_schema, row_count, store};
use tidings_core::{InboxError, InboxMark, InboxStore};
use tidings_postgres::{PgOutboxStore, Retention};
use uuid::Uuid;

async fn marks(store: &PgOutboxStore) -> i64 {
    let sql = format!(
        "select count(*) from \"{}\".tidings_inbox",
        store.options().get_schema()
    );
    sqlx::query_scalar(AssertSqlSafe(sql))
        .fetch_one(store.pool())
        .await
        .unwrap()
}

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
    assert_eq!((marks(&store).await, row_count(&store).await), (1, 1));

    let mut tx = inbox.begin().await.unwrap();
    assert_eq!(
        inbox.mark(&mut tx, "billing", event).await.unwrap(),
        InboxMark::Duplicate
    );
    assert_eq!(
        inbox.mark(&mut tx, "shipping", event).await.unwrap(),
        InboxMark::Fresh
    );
    let one: i32 = sqlx::query_scalar("select 1")
        .fetch_one(tx.tx())
        .await
        .unwrap();
    assert_eq!(one, 1, "the transaction still works after a duplicate");
    inbox.commit(tx).await.unwrap();
    assert_eq!(marks(&store).await, 2);
    drop_schema(&store).await;
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
    assert_eq!((marks(&store).await, row_count(&store).await), (0, 0));
    drop_schema(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrent_mark_waits_and_sees_the_committed_one() {
    let store = store(Retention::Delete).await;
    let inbox = store.inbox();
    let event = Uuid::now_v7();

    let mut first = inbox.begin().await.unwrap();
    assert_eq!(
        inbox.mark(&mut first, "billing", event).await.unwrap(),
        InboxMark::Fresh
    );
    let second = {
        let inbox = inbox.clone();
        tokio::spawn(async move {
            let mut tx = inbox.begin().await.unwrap();
            let mark = inbox.mark(&mut tx, "billing", event).await.unwrap();
            inbox.commit(tx).await.unwrap();
            mark
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !second.is_finished(),
        "the second mark waits for the first transaction"
    );
    inbox.commit(first).await.unwrap();
    assert_eq!(second.await.unwrap(), InboxMark::Duplicate);
    drop_schema(&store).await;
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
    assert_eq!(marks(&store).await, 1, "other consumers keep their marks");
    drop_schema(&store).await;
}

#[tokio::test]
async fn hostile_consumer_names_are_refused() {
    let store = store(Retention::Delete).await;
    let inbox = store.inbox();
    let mut tx = inbox.begin().await.unwrap();
    let err = inbox
        .mark(&mut tx, "billing'; --", Uuid::now_v7())
        .await
        .unwrap_err();
    assert!(matches!(err, InboxError::Invalid(_)), "{err}");
    drop(tx);
    drop_schema(&store).await;
}

/// Remembers the stores it made so their schemas go after the case.
struct Pg(std::sync::Mutex<Vec<PgOutboxStore>>);

impl tidings_testing::inbox::InboxHarness for Pg {
    type Store = tidings_postgres::PgInboxStore;

    async fn store(&self) -> tidings_postgres::PgInboxStore {
        let store = store(Retention::Delete).await;
        self.0.lock().unwrap().push(store.clone());
        store.inbox()
    }

    async fn teardown(&self) {
        let stores = std::mem::take(&mut *self.0.lock().unwrap());
        for store in &stores {
            drop_schema(store).await;
        }
    }
}

mod conformance {
    use super::*;
    tidings_testing::inbox_conformance!(Pg(Default::default()));
}
