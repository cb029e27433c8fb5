//! Staging: events commit with the caller's writes or not at all, and the
//! transaction helper runs a conflicting closure again.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::time::Duration;

use crate::support::{ORDER_EVENTS, claim, documents, drop_collections, store};
use futures::FutureExt;
use mongodb::Collection;
use mongodb::bson::{Document, doc};
use tidings_core::{ClaimedBatch, Staged};
use tidings_mongo::{CommitError, MongoContext, MongoOutboxStore, Retention};
use uuid::Uuid;

fn orders(store: &MongoOutboxStore) -> Collection<Document> {
    let name = format!("{}_orders", store.outbox().name());
    store.database().collection(&name)
}

/// Inserts `order` into `orders` in the context's transaction.
async fn insert_order(ctx: &mut MongoContext, orders: &Collection<Document>, order: Document) {
    orders
        .insert_one(order)
        .session(ctx.session())
        .await
        .unwrap();
}

/// Stages an `order.placed` event of [`ORDER_EVENTS`].
fn stage_placed(ctx: &mut MongoContext) -> Staged<'_> {
    ctx.outbox()
        .stage(&ORDER_EVENTS, "order.placed", &1)
        .unwrap()
}

#[tokio::test]
async fn a_committed_context_writes_the_order_and_its_event_together() {
    let store = store(Retention::Delete).await;
    let orders = orders(&store);
    let mut ctx = store.begin().await.unwrap();
    insert_order(&mut ctx, &orders, doc! { "_id": 1 }).await;
    let id = Uuid::now_v7();
    stage_placed(&mut ctx)
        .event_id(id)
        .header("traceparent", "00-1-2-01");
    ctx.outbox().stage(&ORDER_EVENTS, "order.paid", &1).unwrap();
    assert_eq!(
        documents(store.outbox()).await,
        0,
        "nothing visible before commit"
    );
    ctx.commit().await.unwrap();

    assert_eq!(documents(&orders).await, 1);
    let batch = claim(&store, 100).await;
    let types: Vec<_> = batch
        .records()
        .iter()
        .map(|r| r.envelope.event_type.as_str())
        .collect();
    assert_eq!(types, ["order.placed", "order.paid"]);
    assert_eq!(batch.records()[0].envelope.event_id, id);
    orders.drop().await.unwrap();
    drop_collections(&store).await;
}

#[tokio::test]
async fn a_rolled_back_or_dropped_context_leaves_nothing() {
    let store = store(Retention::Delete).await;
    let orders = orders(&store);
    for rollback in [true, false] {
        let mut ctx = store.begin().await.unwrap();
        insert_order(&mut ctx, &orders, doc! { "rollback": rollback }).await;
        stage_placed(&mut ctx);
        ctx.flush().await.unwrap();
        if rollback {
            ctx.rollback().await.unwrap();
        } else {
            drop(ctx);
        }
    }
    // A dropped session aborts its transaction in the background.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(documents(store.outbox()).await, 0);
    assert_eq!(documents(&orders).await, 0);
    assert!(claim(&store, 100).await.records().is_empty());
    drop_collections(&store).await;
}

#[tokio::test]
async fn an_event_staged_again_is_skipped_and_the_rest_commits() {
    let store = store(Retention::Delete).await;
    let orders = orders(&store);
    let id = Uuid::now_v7();
    for attempt in 0..2 {
        let mut ctx = store.begin().await.unwrap();
        insert_order(&mut ctx, &orders, doc! { "attempt": attempt as i64 }).await;
        stage_placed(&mut ctx).event_id(id);
        ctx.outbox().stage(&ORDER_EVENTS, "fresh", &2).unwrap();
        assert_eq!(ctx.flush().await.unwrap(), 2 - attempt);
        ctx.commit().await.unwrap();
    }
    assert_eq!(
        documents(store.outbox()).await,
        3,
        "the repeated event is stored once"
    );
    assert_eq!(documents(&orders).await, 2);
    orders.drop().await.unwrap();
    drop_collections(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_staged_by_two_transactions_at_once_is_stored_once() {
    let store = store(Retention::Delete).await;
    let id = Uuid::now_v7();
    let mut first = store.begin().await.unwrap();
    stage_placed(&mut first).event_id(id);
    first.flush().await.unwrap();

    let mut second = store.begin().await.unwrap();
    stage_placed(&mut second).event_id(id);
    let err = second.flush().await.unwrap_err();
    assert!(err.is_transient(), "{err}");
    drop(second);
    first.commit().await.unwrap();

    // Run again, the second transaction finds the event and skips it.
    let runs = AtomicU32::new(0);
    store
        .transaction(|ctx| {
            runs.fetch_add(1, SeqCst);
            let staged = ctx
                .outbox()
                .stage(&ORDER_EVENTS, "order.placed", &1)
                .map(|staged| {
                    staged.event_id(id);
                });
            async move { Ok(staged?) }.boxed()
        })
        .await
        .unwrap();
    assert_eq!(runs.load(SeqCst), 1);
    assert_eq!(documents(store.outbox()).await, 1);
    drop_collections(&store).await;
}

#[tokio::test]
async fn a_session_the_caller_holds_commits_with_the_events() {
    let store = store(Retention::Delete).await;
    let orders = orders(&store);
    let session = store.client().start_session().await.unwrap();
    let mut ctx = store.begin_on(session).await.unwrap();
    ctx.outbox()
        .stage(&ORDER_EVENTS, "order.placed", &5)
        .unwrap();
    let mut session = ctx.into_session().await.unwrap();
    orders
        .insert_one(doc! { "_id": 5 })
        .session(&mut session)
        .await
        .unwrap();
    assert_eq!(documents(store.outbox()).await, 0);
    session.commit_transaction().await.unwrap();
    assert_eq!(documents(store.outbox()).await, 1);
    assert_eq!(documents(&orders).await, 1);
    orders.drop().await.unwrap();
    drop_collections(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_transaction_helper_reruns_a_conflicting_closure_and_commits_once() {
    let store = store(Retention::Delete).await;
    let orders = orders(&store);
    orders
        .insert_one(doc! { "_id": 1, "total": 0 })
        .await
        .unwrap();

    // Another transaction holds an uncommitted write on the order.
    let mut other = store.client().start_session().await.unwrap();
    other.start_transaction().await.unwrap();
    orders
        .update_one(doc! { "_id": 1 }, doc! { "$inc": { "total": 100 } })
        .session(&mut other)
        .await
        .unwrap();

    let runs = Arc::new(AtomicU32::new(0));
    let helper = tokio::spawn({
        let (store, orders, runs) = (store.clone(), orders.clone(), runs.clone());
        async move {
            store
                .transaction(|ctx| {
                    let (orders, runs) = (orders.clone(), runs.clone());
                    async move {
                        runs.fetch_add(1, SeqCst);
                        ctx.outbox().stage(&ORDER_EVENTS, "order.updated", &1)?;
                        orders
                            .update_one(doc! { "_id": 1 }, doc! { "$inc": { "total": 1 } })
                            .session(ctx.session())
                            .await?;
                        Ok("done")
                    }
                    .boxed()
                })
                .await
        }
    });
    // Let the helper conflict at least once, then let the other commit.
    let started = tokio::time::Instant::now();
    while runs.load(SeqCst) < 2 {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no conflict seen"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    other.commit_transaction().await.unwrap();

    assert_eq!(helper.await.unwrap().unwrap(), "done");
    assert!(runs.load(SeqCst) >= 2);
    let order = orders.find_one(doc! { "_id": 1 }).await.unwrap().unwrap();
    assert_eq!(
        order.get_i32("total").unwrap(),
        101,
        "applied once, after the other"
    );
    assert_eq!(
        documents(store.outbox()).await,
        1,
        "one event, not one per run"
    );
    orders.drop().await.unwrap();
    drop_collections(&store).await;
}

#[tokio::test]
async fn an_abandoned_transaction_is_not_run_again() {
    let store = store(Retention::Delete).await;
    let runs = AtomicU32::new(0);
    let result: Result<(), _> = store
        .transaction(|ctx| {
            runs.fetch_add(1, SeqCst);
            let staged = ctx
                .outbox()
                .stage(&ORDER_EVENTS, "order.placed", &1)
                .map(|_| ());
            async move {
                staged?;
                Err(CommitError::abandon("out of stock"))
            }
            .boxed()
        })
        .await;
    assert!(matches!(result, Err(CommitError::Abandoned(_))));
    assert_eq!(runs.load(SeqCst), 1);
    assert_eq!(documents(store.outbox()).await, 0);
    drop_collections(&store).await;
}
