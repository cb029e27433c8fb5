//! The connections locked claims run on: the store's own, outside the
//! pool, bounded in number, with their statements kept prepared, and
//! replaced when the server closes them.

use crate::support;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use sqlx::AssertSqlSafe;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use support::{
    ORDER_EVENTS, drop_schema, named_pool, orders_relay, pool, publish_all, stage_to,
    store_on_options,
};
use tidings_core::ManualClock;
use tidings_core::memory::MemoryBroker;
use tidings_core::relay::{Relay, RelayOptions};
use tidings_core::{ClaimedBatch, OutboxSpec, RawCodec, StoreError};
use tidings_postgres::{ClaimMode, PgBatch, PgOutboxOptions, PgOutboxStore};
use tidings_testing::names::unique_name;
use tidings_testing::services::database_url;
use tidings_testing::store::try_claim;

fn locked(claim_connections: usize) -> PgOutboxOptions {
    PgOutboxOptions::new()
        .claim_mode(ClaimMode::Locked)
        .claim_connections(claim_connections)
}

async fn claim(store: &PgOutboxStore, limit: usize) -> Result<PgBatch, StoreError> {
    try_claim(store, ORDER_EVENTS.route(), limit).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locked_claims_need_no_pooled_connection() {
    let store = store_on_options(pool(1).await, locked(1)).await;
    stage_to(&store, &ORDER_EVENTS, 3).await;
    // The caller holds the pool's only connection throughout.
    let held = store.pool().acquire().await.unwrap();

    let batch = tokio::time::timeout(Duration::from_secs(5), claim(&store, 10))
        .await
        .expect("claimed without the pool")
        .unwrap();
    assert!(batch.is_locked());
    assert_eq!(publish_all(batch).await, 3);

    drop(held);
    assert_eq!(support::row_count(&store).await, 0);
    drop_schema(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_drains_through_a_single_claim_connection() {
    // Each batch holds the only claim connection until it settles: its
    // claim record must not need it, and while the next claim waits for
    // the connection, the batch is settled at once.
    let store = store_on_options(pool(1).await, locked(1)).await;
    stage_to(&store, &ORDER_EVENTS, 250).await;
    let (relay, broker) = orders_relay(&store, RelayOptions::default().batch_size(50));
    let drained = tokio::time::timeout(Duration::from_secs(8), relay.drain()).await;
    let report = drained.expect("drained without stalling");
    assert_eq!(report.unwrap().published, 250);
    assert_eq!(broker.depth("orders"), 250);
    let sql = format!(
        "select count(*) from \"{}\".tidings_outbox_claims",
        store.options().get_schema()
    );
    let records: i64 = sqlx::query_scalar(AssertSqlSafe(sql))
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(records, 0, "every settle deleted its claim's record");
    drop_schema(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_relays_drain_through_two_claim_connections() {
    // Each relay can hold a locked batch on one of the two connections
    // while claiming its next batch: a batch whose next claim waits is
    // settled at once, giving its connection back.
    static INVOICE_EVENTS: OutboxSpec<u64> =
        OutboxSpec::json("invoice-events").destination("invoices");
    let store = store_on_options(pool(2).await, locked(2)).await;
    stage_to(&store, &ORDER_EVENTS, 250).await;
    stage_to(&store, &INVOICE_EVENTS, 250).await;
    let broker = MemoryBroker::new();
    broker.declare_queue("orders");
    broker.declare_queue("invoices");
    let config = RelayOptions::default().batch_size(25);
    let orders = Relay::new(store.clone(), broker.clone(), &ORDER_EVENTS)
        .unwrap()
        .options(config);
    let invoices = Relay::new(store.clone(), broker.clone(), &INVOICE_EVENTS)
        .unwrap()
        .options(config);
    let both = async { tokio::try_join!(orders.drain(), invoices.drain()) };
    let drained = tokio::time::timeout(Duration::from_secs(8), both).await;
    let (a, b) = drained.expect("drained without stalling").unwrap();
    assert_eq!((a.published, b.published), (250, 250));
    assert_eq!(
        (broker.depth("orders"), broker.depth("invoices")),
        (250, 250)
    );
    drop_schema(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_go_on_after_the_server_closes_their_idle_connections() {
    let application = unique_name("tidings_claims");
    // Any connection of the main pool's, to end the others from.
    let admin = pool(1).await;
    let store = store_on_options(named_pool(&application).await, locked(2)).await;
    stage_to(&store, &ORDER_EVENTS, 4).await;
    let (first, second) = (
        claim(&store, 1).await.unwrap(),
        claim(&store, 1).await.unwrap(),
    );
    assert_eq!(publish_all(first).await + publish_all(second).await, 2);

    // Both claim connections are idle now: end them, as a restart would.
    let ended: Vec<bool> = sqlx::query_scalar(
        "select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1",
    )
    .bind(&application)
    .fetch_all(&admin)
    .await
    .unwrap();
    assert!(ended.len() >= 2 && ended.iter().all(|e| *e), "{ended:?}");

    let batch = claim(&store, 10)
        .await
        .expect("claimed on a new connection");
    assert_eq!(publish_all(batch).await, 2);
    assert_eq!(support::row_count(&store).await, 0);
    drop_schema(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_of_many_sizes_on_one_connection_keep_working() {
    // Each size is a statement of its own, kept prepared on the connection.
    let store = store_on_options(pool(2).await, locked(1)).await;
    claims_of_many_sizes(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_work_on_a_pool_that_keeps_no_statements() {
    // The pool's connections cache no statement; the claim connections,
    // opened with its settings, turn their cache on, as a claim's
    // statement stays prepared there.
    let options: PgConnectOptions = database_url().parse().unwrap();
    let uncached = PgPoolOptions::new()
        .max_connections(2)
        .connect_with(options.statement_cache_capacity(0))
        .await
        .unwrap();
    let store = store_on_options(uncached, locked(1)).await;
    claims_of_many_sizes(&store).await;
}

/// Claims 100 staged rows of `store` in batches of every size from 1 to
/// 45, then 1 to 3 again, on one claim connection.
async fn claims_of_many_sizes(store: &PgOutboxStore) {
    stage_to(store, &ORDER_EVENTS, 100).await;
    let mut published = 0;
    for limit in (1..=45).chain(1..=3) {
        let batch = claim(store, limit).await.unwrap();
        assert_eq!(batch.records().len(), limit.min(100 - published));
        published += publish_all(batch).await;
    }
    assert_eq!(published, 100);
    drop_schema(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_route_name_is_sent_as_a_value_whatever_it_holds() {
    static HOSTILE: OutboxSpec<u64> =
        OutboxSpec::json(r"x\'); drop table orders; --").destination("orders");
    let store = store_on_options(pool(2).await, locked(1)).await;
    stage_to(&store, &ORDER_EVENTS, 1).await;
    let batch = try_claim(&store, HOSTILE.route(), 10)
        .await
        .expect("an ordinary claim");
    assert!(batch.records().is_empty(), "no row has that route");
    assert_eq!(publish_all(claim(&store, 10).await.unwrap()).await, 1);
    drop_schema(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_byte_of_a_payload_comes_back_as_staged() {
    static RAW: OutboxSpec<Vec<u8>, RawCodec> =
        OutboxSpec::with_codec("raw-events", RawCodec).destination("raw");
    let store = store_on_options(pool(2).await, locked(1)).await;
    let payload: Vec<u8> = (0..=255).chain((0..=255).rev()).collect();
    let mut ctx = store.begin().await.unwrap();
    ctx.outbox().stage(&RAW, "raw.bytes", &payload).unwrap();
    ctx.outbox().stage(&RAW, "raw.empty", &Vec::new()).unwrap();
    // Read as hex, this would be the byte 0x41 and a stray backslash.
    let backslashes = br"\x41\".to_vec();
    ctx.outbox()
        .stage(&RAW, "raw.backslashes", &backslashes)
        .unwrap();
    ctx.commit().await.unwrap();

    let batch = try_claim(&store, RAW.route(), 10).await.unwrap();
    let payloads: Vec<&[u8]> = batch
        .records()
        .iter()
        .map(|r| r.envelope.payload.as_ref())
        .collect();
    assert_eq!(payloads, [&payload[..], &[], &backslashes[..]]);
    assert_eq!(publish_all(batch).await, 3);
    drop_schema(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn staging_times_come_back_exactly_on_a_whole_second_too() {
    let whole = SystemTime::UNIX_EPOCH + Duration::from_secs(1_790_000_000);
    let clock = ManualClock::new(whole);
    let options = locked(1).clock(Arc::new(clock.clone()));
    let store = store_on_options(pool(2).await, options).await;
    stage_to(&store, &ORDER_EVENTS, 1).await;
    clock.advance(Duration::from_micros(1));
    stage_to(&store, &ORDER_EVENTS, 1).await;
    clock.advance(Duration::from_millis(500));
    stage_to(&store, &ORDER_EVENTS, 1).await;

    let batch = claim(&store, 10).await.expect("claimed and decoded");
    let times: Vec<SystemTime> = batch
        .records()
        .iter()
        .map(|r| r.envelope.occurred_at)
        .collect();
    let micros = |us| whole + Duration::from_micros(us);
    assert_eq!(times, [whole, micros(1), micros(500_001)]);
    assert_eq!(publish_all(batch).await, 3);
    drop_schema(&store).await;
}
