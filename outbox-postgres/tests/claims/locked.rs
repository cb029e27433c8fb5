//! Locked claims: rows held by locks in an open transaction, untouched
//! until they settle, given back when the batch is dropped or sits idle
//! past its lease, and counted as crashes when their claim dies unsettled.

use crate::support;

use std::time::Duration;

use sqlx::Row;
use support::{
    ORDER_EVENTS, claim_orders, drop_schema, orders_relay, pool, publish_all, stage_to,
    store_on_with, store_with,
};
use tidings_core::relay::RelayOptions;
use tidings_core::{ClaimedBatch, OutboxStore, Outcome, Settlement};
use tidings_postgres::{ClaimMode, PgBatch, PgOutboxStore, Retention};
use tidings_testing::store::settle_all;
use uuid::Uuid;

const LONG_LEASE: Duration = Duration::from_secs(300);

/// Claims `n` rows as soon as all of them are free again; fails after five
/// seconds.
async fn claim_all_soon(store: &PgOutboxStore, n: usize) -> PgBatch {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let batch = claim_orders(store, n, LONG_LEASE).await;
        if batch.records().len() == n || tokio::time::Instant::now() > deadline {
            assert_eq!(batch.records().len(), n, "rows given back");
            return batch;
        }
        drop(batch);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn stage(store: &PgOutboxStore, events: u64) {
    stage_to(store, &ORDER_EVENTS, events).await;
}

/// Each row's status and attempts as stored, read outside any batch.
async fn stored(store: &PgOutboxStore) -> Vec<(String, i32, i32)> {
    let sql = format!(
        "select status, attempts_started, attempts_finished from \"{}\".tidings_outbox order by id",
        store.options().get_schema()
    );
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .fetch_all(store.pool())
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect()
}

fn pending(n: usize, started: i32, finished: i32) -> Vec<(String, i32, i32)> {
    vec![("pending".to_owned(), started, finished); n]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locked_claim_writes_nothing_until_it_settles() {
    let store = store_with(Retention::Keep, ClaimMode::Locked).await;
    stage(&store, 3).await;

    let batch = claim_orders(&store, 10, LONG_LEASE).await;
    assert!(batch.is_locked());
    assert_eq!(batch.records().len(), 3);
    assert_eq!(batch.records()[0].attempts_started, 1);
    assert_eq!(batch.records()[0].envelope.attempts, 1);
    assert_eq!(stored(&store).await, pending(3, 0, 0));
    assert!(
        claim_orders(&store, 10, LONG_LEASE)
            .await
            .records()
            .is_empty()
    );

    let settlements = outcomes_of_first_published(&batch);
    let report = batch.settle(settlements).await.unwrap();
    assert_eq!((report.published, report.rescheduled), (1, 2));
    let published = ("published".to_owned(), 1, 1);
    let rescheduled = pending(2, 1, 1);
    assert_eq!(
        stored(&store).await,
        [vec![published], rescheduled].concat()
    );
    drop_schema(&store).await;
}

/// The first row published, the others rescheduled far ahead.
fn outcomes_of_first_published(batch: &PgBatch) -> Vec<Settlement> {
    let mut settlements = settle_all(
        batch,
        Outcome::Retry {
            delay: Duration::from_secs(60),
            error: "later".into(),
        },
    );
    settlements[0].outcome = Outcome::Published;
    settlements
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_locked_batch_gives_its_rows_back_untouched() {
    let store = store_with(Retention::Delete, ClaimMode::Locked).await;
    stage(&store, 2).await;

    let batch = claim_orders(&store, 10, LONG_LEASE).await;
    assert_eq!(batch.records().len(), 2);
    drop(batch); // its connection closed, so the server rolls back

    let again = claim_all_soon(&store, 2).await;
    assert_eq!(again.records()[0].attempts_started, 1, "no attempt counted");
    assert_eq!(publish_all(again).await, 2);
    assert_eq!(support::row_count(&store).await, 0);
    drop_schema(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locked_batch_idle_past_its_lease_is_ended_and_its_settle_fails() {
    let store = store_with(Retention::Delete, ClaimMode::Locked).await;
    stage(&store, 2).await;

    let stuck = claim_orders(&store, 10, Duration::from_millis(200)).await;
    assert_eq!(stuck.records().len(), 2);
    tokio::time::sleep(Duration::from_millis(600)).await;
    let new = claim_orders(&store, 10, LONG_LEASE).await;
    assert_eq!(new.records().len(), 2, "the server released the rows");

    let settlements = settle_all(&stuck, Outcome::Published);
    let error = stuck
        .settle(settlements)
        .await
        .expect_err("the transaction was ended");
    assert!(error.is_transient(), "{error:?}");
    assert_eq!(support::row_count(&store).await, 2, "nothing was written");

    assert_eq!(publish_all(new).await, 2);
    assert_eq!(support::row_count(&store).await, 0);
    drop_schema(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locked_settle_touches_only_its_own_rows() {
    let store = store_with(Retention::Delete, ClaimMode::Locked).await;
    stage(&store, 2).await;

    let first = claim_orders(&store, 1, LONG_LEASE).await;
    let second = claim_orders(&store, 1, LONG_LEASE).await;
    let foreign = second.records()[0].envelope.event_id;
    let mut settlements = settle_all(&first, Outcome::Published);
    settlements.push(Settlement {
        event_id: foreign,
        outcome: Outcome::Published,
    });
    settlements.push(Settlement {
        event_id: Uuid::new_v4(),
        outcome: Outcome::Published,
    });

    let report = first.settle(settlements).await.unwrap();
    assert_eq!(report.published, 1);
    assert_eq!(report.lost.len(), 2);
    assert!(report.lost.contains(&foreign));
    assert_eq!(support::row_count(&store).await, 1);
    assert_eq!(publish_all(second).await, 1);
    drop_schema(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_locked_claim_holds_no_connection() {
    let store = store_with(Retention::Delete, ClaimMode::Locked).await;
    // More than the store's 4 claim connections, all kept.
    let mut empty = Vec::new();
    for _ in 0..20 {
        let batch = claim_orders(&store, 10, LONG_LEASE).await;
        assert!(batch.records().is_empty());
        assert!(!batch.is_locked());
        empty.push(batch);
    }
    stage(&store, 1).await;
    let batch = claim_orders(&store, 10, LONG_LEASE).await;
    assert_eq!(batch.records().len(), 1);
    drop((batch, empty));
    drop_schema(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locked_claims_that_die_unsettled_count_until_the_relay_fails_the_row() {
    let store = store_with(Retention::Delete, ClaimMode::Locked).await;
    stage(&store, 1).await;
    let lease = Duration::from_millis(150);
    for crashes in 0..3 {
        let batch = claim_orders(&store, 10, lease).await;
        assert_eq!(batch.records()[0].crashes(), crashes);
        drop(batch); // the relay dies mid-publish
        assert_eq!(
            store.sweep_expired(ORDER_EVENTS.name(), 100).await.unwrap(),
            0,
            "the record has not expired yet"
        );
        tokio::time::sleep(lease + Duration::from_millis(150)).await;
        assert_eq!(
            store.sweep_expired(ORDER_EVENTS.name(), 100).await.unwrap(),
            1
        );
    }

    let (relay, broker) = orders_relay(&store, RelayOptions::default().max_crashes(3));
    let report = relay.drain().await.unwrap();
    assert_eq!((report.published, report.failed), (0, 1));
    assert_eq!(broker.depth("orders"), 0, "a crash loop is not published");
    let stats = store.stats(ORDER_EVENTS.name()).await.unwrap();
    assert_eq!((stats.pending, stats.failed), (0, 1));
    drop_schema(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_leaves_rows_a_live_claim_holds_for_later() {
    let store = store_with(Retention::Delete, ClaimMode::Locked).await;
    stage(&store, 1).await;
    let lease = Duration::from_millis(150);
    drop(claim_orders(&store, 10, lease).await); // dies
    let live = claim_orders(&store, 10, LONG_LEASE).await;
    tokio::time::sleep(lease + Duration::from_millis(150)).await;
    assert_eq!(
        store.sweep_expired(ORDER_EVENTS.name(), 100).await.unwrap(),
        0,
        "the row is locked by a live claim"
    );
    let settlements = settle_all(
        &live,
        Outcome::Retry {
            delay: Duration::ZERO,
            error: "broker busy".into(),
        },
    );
    assert_eq!(live.settle(settlements).await.unwrap().rescheduled, 1);
    assert_eq!(
        store.sweep_expired(ORDER_EVENTS.name(), 100).await.unwrap(),
        1
    );
    let again = claim_orders(&store, 10, LONG_LEASE).await;
    let record = &again.records()[0];
    assert_eq!((record.attempts_started, record.attempts_finished), (3, 1));
    assert_eq!(record.crashes(), 1);
    drop(again);
    drop_schema(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_of_several_publish_windows_are_published_and_settled_whole() {
    let store = store_on_with(pool(4).await, Retention::Delete, ClaimMode::Locked).await;
    stage(&store, 620).await;
    let config = RelayOptions::default().batch_size(250).publish_window(100);
    let (relay, broker) = orders_relay(&store, config);
    let report = relay.drain().await.unwrap();
    assert_eq!((report.claimed, report.published), (620, 620));
    assert_eq!(broker.depth("orders"), 620);
    let sql = format!(
        "select count(*) from \"{}\".tidings_outbox",
        store.options().get_schema()
    );
    let left: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(left, 0, "every published row was settled");
    drop_schema(&store).await;
}
