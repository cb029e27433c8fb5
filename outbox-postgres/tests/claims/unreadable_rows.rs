//! Rows a claim cannot read back (headers written by hand that are not a
//! JSON object of strings, a negative attempt count) are failed in place
//! with the reason and kept, the claim reports the first by event id, and
//! the next claim goes on past them: in every claim mode, directly and
//! behind the pooler, and under a running relay.

use crate::support;

use std::time::Duration;

use sqlx::{AssertSqlSafe, PgPool};
use support::pooler::{pooled_pool, pooled_store_on};
use support::{ORDER_EVENTS, drop_schema, stage_with_id, store_with};
use tidings_core::memory::MemoryBroker;
use tidings_core::relay::Relay;
use tidings_core::{
    ClaimedBatch, FailedFilter, OutboxAdmin, OutboxStore, Requeue, Source, StoreError,
};
use tidings_postgres::{ClaimMode, PgOutboxOptions, PgOutboxStore, Retention};
use tidings_testing::broker::next_within;
use tidings_testing::store::try_claim;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// Stages four events and damages the first two; returns their ids.
async fn stage_and_damage(store: &PgOutboxStore, direct: &PgPool) -> Vec<Uuid> {
    let ids: Vec<Uuid> = (0..4).map(|_| Uuid::now_v7()).collect();
    for id in &ids {
        stage_with_id(store, *id).await;
    }
    let table = format!("\"{}\".tidings_outbox", store.options().get_schema());
    for (id, damage) in ids.iter().zip([
        "headers = '{\"retries\": 3}'::jsonb",
        "attempts_started = -5",
    ]) {
        let sql = format!("update {table} set {damage} where event_id = $1");
        sqlx::query(AssertSqlSafe(sql))
            .bind(id)
            .execute(direct)
            .await
            .unwrap();
    }
    ids
}

async fn claim(store: &PgOutboxStore) -> Result<tidings_postgres::PgBatch, StoreError> {
    try_claim(store, ORDER_EVENTS.route(), 10).await
}

/// The scenario, on `store`, whose tables `direct` reaches past any pooler.
async fn unreadable_rows_are_failed_kept_and_passed(store: PgOutboxStore, direct: &PgPool) {
    let ids = stage_and_damage(&store, direct).await;

    let err = claim(&store).await.unwrap_err();
    assert!(
        matches!(&err, StoreError::Corrupt { event_id, reason }
            if *event_id == ids[0] && reason.contains("JSON object of strings")),
        "{err}"
    );
    assert!(err.is_recoverable() && !err.is_transient());

    // The readable rows are claimable at once, their failed claim not
    // counted as an attempt.
    let batch = claim(&store)
        .await
        .expect("the readable rows are claimable");
    let claimed: Vec<Uuid> = batch
        .records()
        .iter()
        .map(|r| r.envelope.event_id)
        .collect();
    assert_eq!(claimed, ids[2..]);
    assert!(batch.records().iter().all(|r| r.attempts_started == 1));
    drop(batch);

    let failed = store
        .failed(ORDER_EVENTS.name(), &FailedFilter::default())
        .await
        .unwrap();
    let mut reasons: Vec<(Uuid, String)> = failed
        .into_iter()
        .map(|row| (row.event_id, row.last_error.unwrap_or_default()))
        .collect();
    reasons.sort();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert_eq!(reasons[0].0, ids[0]);
    assert!(reasons[0].1.starts_with("unreadable: "), "{reasons:?}");
    assert!(
        reasons[1].1.contains("attempts_started is negative"),
        "{reasons:?}"
    );

    // Repaired and requeued, a row is claimed like any other.
    let table = format!("\"{}\".tidings_outbox", store.options().get_schema());
    let repair = format!("update {table} set headers = '{{}}'::jsonb where event_id = $1");
    sqlx::query(AssertSqlSafe(repair))
        .bind(ids[0])
        .execute(direct)
        .await
        .unwrap();
    let requeue = Requeue::Ids(vec![ids[0]]);
    let requeued = store.requeue_failed(ORDER_EVENTS.name(), requeue).await;
    assert_eq!(requeued.unwrap(), 1);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let batch = claim(&store).await.unwrap();
    let claimed: Vec<Uuid> = batch
        .records()
        .iter()
        .map(|r| r.envelope.event_id)
        .collect();
    assert!(claimed.contains(&ids[0]), "{claimed:?}");
    drop(batch);
    drop_schema(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locked_claims_set_unreadable_rows_aside() {
    let direct = support::pool(2).await;
    let store = store_with(Retention::Delete, ClaimMode::Locked).await;
    unreadable_rows_are_failed_kept_and_passed(store, &direct).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leased_claims_set_unreadable_rows_aside_and_return_the_rest() {
    let direct = support::pool(2).await;
    let store = store_with(Retention::Delete, ClaimMode::Leased).await;
    unreadable_rows_are_failed_kept_and_passed(store, &direct).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locked_claims_behind_the_pooler_set_unreadable_rows_aside() {
    let direct = support::pool(2).await;
    let options = PgOutboxOptions::new().claim_mode(ClaimMode::Locked);
    let store = pooled_store_on(pooled_pool(8).await, options).await;
    unreadable_rows_are_failed_kept_and_passed(store, &direct).await;
}

/// A running relay logs the unreadable rows, backs off, and publishes the
/// rest instead of stopping.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_goes_on_past_unreadable_rows() {
    let direct = support::pool(2).await;
    let store = store_with(Retention::Delete, ClaimMode::Locked).await;
    let ids = stage_and_damage(&store, &direct).await;
    let broker = MemoryBroker::new();
    broker.declare_queue("orders");
    let relay = Relay::new(store.clone(), broker.clone(), &ORDER_EVENTS).unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let cancel = cancel.clone();
        async move { relay.run(cancel).await }
    });
    let mut stream = broker.subscribe("orders").await.unwrap();
    let mut published = Vec::new();
    while let Some(delivery) = next_within(&mut stream, Duration::from_secs(10)).await {
        published.push(delivery.envelope().event_id);
        if published.len() == 2 {
            break;
        }
    }
    assert_eq!(published, ids[2..]);
    assert!(!run.is_finished(), "the relay still runs");
    cancel.cancel();
    run.await.unwrap().expect("the relay ends cleanly");
    let stats = store.stats(ORDER_EVENTS.name()).await.unwrap();
    assert_eq!((stats.failed, stats.pending), (2, 0), "{stats:?}");
    drop_schema(&store).await;
}
