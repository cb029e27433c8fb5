//! Claim records: a locked claim names its rows as ranges of row ids, the
//! sweep counts a crash against every row of a record left behind, and
//! records naming their rows one by one, as written before ranges, are
//! still read.

use crate::support;

use std::time::Duration;

use support::{ORDER_EVENTS, claim_orders, drop_schema, stage_to, store_with};
use tidings_core::{ClaimedBatch, OutboxStore};
use tidings_postgres::{ClaimMode, PgOutboxStore, Retention};
use tidings_testing::eventually::eventually;

const LONG_LEASE: Duration = Duration::from_secs(300);
const SHORT_LEASE: Duration = Duration::from_millis(150);

async fn sweep(store: &PgOutboxStore) -> u64 {
    store.sweep_expired(ORDER_EVENTS.name(), 100).await.unwrap()
}

/// The claim records of the store's outbox, as the sweep reads them.
fn claims_table(store: &PgOutboxStore) -> String {
    format!("\"{}\".tidings_outbox_claims", store.options().get_schema())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_of_rows_apart_names_each_of_them_and_no_other() {
    let store = store_with(Retention::Delete, ClaimMode::Locked).await;
    stage_to(&store, &ORDER_EVENTS, 3).await;
    let first = claim_orders(&store, 1, LONG_LEASE).await;
    let second = claim_orders(&store, 1, LONG_LEASE).await;
    drop(first);
    // The first and the third row: the second is held by a live claim.
    let apart = claim_orders(&store, 10, SHORT_LEASE).await;
    assert_eq!(apart.records().len(), 2);
    // Records are written beside the claim, off its path.
    let stats = || async { store.stats(ORDER_EVENTS.name()).await.unwrap() };
    let stats = eventually(Duration::from_secs(2), stats, |s| s.in_flight == 3).await;
    assert_eq!((stats.pending, stats.in_flight), (0, 3), "{stats:?}");

    drop(apart); // the relay dies mid-publish
    tokio::time::sleep(SHORT_LEASE + Duration::from_millis(150)).await;
    assert_eq!(sweep(&store).await, 2, "both rows of the dead claim");

    let crashes: Vec<u32> = {
        let again = claim_orders(&store, 10, LONG_LEASE).await;
        again.records().iter().map(|r| r.crashes()).collect()
    };
    assert_eq!(crashes, [1, 1], "the row of the live claim counts none");
    drop(second);
    drop_schema(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_naming_its_rows_one_by_one_is_still_swept() {
    let store = store_with(Retention::Delete, ClaimMode::Locked).await;
    stage_to(&store, &ORDER_EVENTS, 2).await;
    let outbox = format!("\"{}\".tidings_outbox", store.options().get_schema());
    let sql = format!(
        "insert into {} (token, route, ids, expires_at) \
         select gen_random_uuid(), $1, array_agg(id), now() - interval '1 second' from {outbox}",
        claims_table(&store)
    );
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(ORDER_EVENTS.name())
        .execute(store.pool())
        .await
        .unwrap();

    assert_eq!(sweep(&store).await, 2);
    let batch = claim_orders(&store, 10, LONG_LEASE).await;
    let crashes: Vec<u32> = batch.records().iter().map(|r| r.crashes()).collect();
    assert_eq!(crashes, [1, 1]);
    drop(batch);
    drop_schema(&store).await;
}
