//! The rotated outbox: converting a plain one in place, truncating a slot
//! with its live rows moved first (directly and behind a transaction
//! pooler), idempotent staging across slots, and a slot some transaction
//! holds left alone.

use crate::support;

use std::time::Duration;

use sqlx::{AssertSqlSafe, Connection, PgConnection};
use support::pooler::{pooled_pool, pooled_store_on};
use support::{
    ORDER_EVENTS, drop_schema, pool, publish_all, run_sql, stage_to, stage_with_id,
    store_on_options,
};
use tidings_core::{ClaimRequest, ClaimedBatch, OutboxStore, Outcome, Requeue, StoreError};
use tidings_postgres::{
    ClaimMode, Layout, PgBatch, PgOutboxOptions, PgOutboxStore, Pooling, Retention, Rotation,
};
use tidings_testing::services::database_url;
use tidings_testing::store::settle_all;
use uuid::Uuid;

const LEASE: Duration = Duration::from_secs(300);

fn leased(layout: Layout) -> PgOutboxOptions {
    PgOutboxOptions::new()
        .claim_mode(ClaimMode::Leased)
        .layout(layout)
}

async fn claim(store: &PgOutboxStore, limit: usize) -> PgBatch {
    let request = ClaimRequest {
        route: ORDER_EVENTS.route(),
        limit,
        lease: LEASE,
        after: None,
    };
    store.claim(request).await.expect("claim")
}

fn outbox(store: &PgOutboxStore) -> String {
    let options = store.options();
    format!("\"{}\".\"{}\"", options.get_schema(), options.get_table())
}

/// Every row of the outbox: id, status, lease token and attempts, by id.
async fn rows(store: &PgOutboxStore) -> Vec<(i64, String, Option<Uuid>, i32)> {
    let sql = format!(
        "select id, status, lease_token, attempts_started from {} order by id",
        outbox(store)
    );
    sqlx::query_as(AssertSqlSafe(sql))
        .fetch_all(&direct(store).await)
        .await
        .unwrap()
}

/// A pool reaching the server directly, for the test's own statements:
/// the store's own, unless it goes through the pooler in transaction
/// mode, which takes only the store's.
async fn direct(store: &PgOutboxStore) -> sqlx::PgPool {
    match store.options().get_pooling() {
        Pooling::Direct => store.pool().clone(),
        Pooling::Transaction => pool(1).await,
    }
}

/// Stages three events, claims one under a lease and leaves it in flight,
/// fails a second and leaves the third pending.
async fn pending_in_flight_and_failed(store: &PgOutboxStore) -> PgBatch {
    stage_to(store, &ORDER_EVENTS, 3).await;
    let failed = claim(store, 1).await;
    let settlements = settle_all(
        &failed,
        Outcome::Failed {
            reason: "refused".into(),
        },
    );
    assert_eq!(failed.settle(settlements).await.unwrap().failed, 1);
    let in_flight = claim(store, 1).await;
    assert_eq!(in_flight.records().len(), 1);
    in_flight
}

/// Settles everything claimable as published; returns how many.
async fn drain(store: &PgOutboxStore) -> usize {
    let batch = claim(store, 100).await;
    let settlements = settle_all(&batch, Outcome::Published);
    let n = settlements.len();
    batch.settle(settlements).await.unwrap();
    n
}

#[tokio::test]
async fn converting_a_plain_outbox_keeps_pending_in_flight_and_failed_rows() {
    let plain = store_on_options(pool(4).await, leased(Layout::Plain)).await;
    let in_flight = pending_in_flight_and_failed(&plain).await;
    let before = rows(&plain).await;
    let statuses: Vec<&str> = before.iter().map(|r| r.1.as_str()).collect();
    assert_eq!(statuses, ["failed", "in_flight", "pending"]);

    let options = plain.options().clone().layout(Layout::Rotated);
    let rotated = PgOutboxStore::new(pool(4).await, options).unwrap();
    assert_eq!(rotated.migrate().await.unwrap(), 1, "the conversion only");
    rotated.verify().await.unwrap();
    assert_eq!(
        rows(&rotated).await,
        before,
        "ids, states, leases, attempts"
    );

    // The lease taken before the conversion still settles its row.
    assert_eq!(publish_all(in_flight).await, 1);
    stage_to(&rotated, &ORDER_EVENTS, 1).await;
    let ids: Vec<i64> = rows(&rotated).await.iter().map(|r| r.0).collect();
    assert!(
        ids.last() > before.iter().map(|r| r.0).max().as_ref(),
        "{ids:?}"
    );
    assert_eq!(drain(&rotated).await, 2);
    let route = &ORDER_EVENTS.route().name;
    assert_eq!(
        rotated.requeue_failed(route, Requeue::All).await.unwrap(),
        1
    );
    assert_eq!(drain(&rotated).await, 1);
    assert!(rows(&rotated).await.is_empty());

    let err = plain.verify().await.unwrap_err();
    assert!(matches!(err, StoreError::Schema(_)), "{err}");
    assert!(err.to_string().contains("Layout::Rotated"), "{err}");
    drop_schema(&rotated).await;
}

/// Moves every row into the slot due for truncation and rotates, until a
/// rotation truncates that slot; returns the slot and how many rows it moved.
async fn rotate_with_rows_in_due_slot(store: &PgOutboxStore) -> (i16, u64) {
    let direct = direct(store).await;
    for _ in 0..20 {
        let due: i16 = sqlx::query_scalar(
            "select ((floor(extract(epoch from statement_timestamp()))::bigint + 2) % 4)::smallint",
        )
        .fetch_one(&direct)
        .await
        .unwrap();
        let sql = format!("update {} set slot = $1 where slot <> $1", outbox(store));
        sqlx::query(AssertSqlSafe(sql))
            .bind(due)
            .execute(&direct)
            .await
            .unwrap();
        match store.rotate().await.unwrap() {
            Rotation::Truncated { slot, moved } if slot == due => return (slot, moved),
            _ => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    panic!("no rotation truncated the due slot in 20 tries");
}

#[tokio::test]
async fn a_rotation_moves_live_rows_to_the_current_slot_and_truncates_its_slot() {
    let store = store_on_options(pool(4).await, leased(Layout::Rotated)).await;
    let in_flight = pending_in_flight_and_failed(&store).await;
    let before = rows(&store).await;

    let (slot, moved) = rotate_with_rows_in_due_slot(&store).await;
    assert_eq!(moved, 3);
    assert_eq!(rows(&store).await, before, "moved, not changed");
    // Only the truncated slot: a slot the rows were staged or moved into
    // in an earlier second keeps their dead versions until its own turn.
    let options = store.options();
    let truncated = format!(
        "\"{}\".\"{}_slot_{slot}\"",
        options.get_schema(),
        options.get_table()
    );
    let sql = format!("select pg_relation_size('{truncated}'::regclass)");
    let size: i64 = sqlx::query_scalar(AssertSqlSafe(sql))
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(size, 0, "the truncated slot takes no space");

    assert_eq!(
        publish_all(in_flight).await,
        1,
        "the lease survives the move"
    );
    assert_eq!(drain(&store).await, 1);
    let route = &ORDER_EVENTS.route().name;
    assert_eq!(store.requeue_failed(route, Requeue::All).await.unwrap(), 1);
    assert_eq!(drain(&store).await, 1);
    drop_schema(&store).await;
}

#[tokio::test]
async fn a_rotation_behind_a_transaction_pooler_truncates_its_slot_keeping_live_rows() {
    let options = PgOutboxOptions::new()
        .claim_mode(ClaimMode::Locked)
        .layout(Layout::Rotated);
    let store = pooled_store_on(pooled_pool(8).await, options).await;
    stage_to(&store, &ORDER_EVENTS, 4).await;
    let before = rows(&store).await;

    assert_eq!(rotate_with_rows_in_due_slot(&store).await.1, 4);
    assert_eq!(rows(&store).await, before);
    assert_eq!(drain(&store).await, 4);
    drop_schema(&store).await;
}

#[tokio::test]
async fn an_event_id_staged_again_after_its_slot_turned_is_skipped() {
    let store = store_on_options(pool(4).await, leased(Layout::Rotated)).await;
    let id = Uuid::now_v7();
    stage_with_id(&store, id).await;
    let sql = format!("update {} set slot = (slot + 1) % 4", outbox(&store));
    run_sql(store.pool(), sql).await;
    stage_with_id(&store, id).await;
    assert_eq!(rows(&store).await.len(), 1);
    drop_schema(&store).await;
}

#[tokio::test]
async fn a_slot_another_transaction_holds_is_left_alone() {
    let store = store_on_options(pool(4).await, leased(Layout::Rotated)).await;
    stage_to(&store, &ORDER_EVENTS, 5).await;
    let mut reader = PgConnection::connect(&database_url()).await.unwrap();
    let mut report = reader.begin().await.unwrap();
    let sql = format!("select count(*) from {}", outbox(&store));
    let seen: i64 = sqlx::query_scalar(AssertSqlSafe(sql))
        .fetch_one(&mut *report)
        .await
        .unwrap();
    assert_eq!(seen, 5);
    // Every slot holds rows, so the due one is never empty.
    let sql = format!(
        "insert into {} (event_id, route, destination, event_type, payload, content_type, \
         occurred_at, slot) select gen_random_uuid(), 'other', 'q', 't', '', 'x', now(), s \
         from generate_series(0, 3) as s",
        outbox(&store)
    );
    run_sql(store.pool(), sql).await;
    let started = std::time::Instant::now();
    assert!(matches!(
        store.rotate().await.unwrap(),
        Rotation::Busy { .. }
    ));
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "it does not wait"
    );
    report.rollback().await.unwrap();
    assert_eq!(rows(&store).await.len(), 9);
    drop_schema(&store).await;
}

#[tokio::test]
async fn a_rotated_outbox_refuses_to_keep_published_rows() {
    let options = PgOutboxOptions::new()
        .layout(Layout::Rotated)
        .retention(Retention::Keep);
    let err = PgOutboxStore::new(pool(1).await, options).unwrap_err();
    assert!(matches!(err, StoreError::Invalid(_)), "{err}");
    assert!(err.to_string().contains("Retention::Keep"), "{err}");
}
