//! Transactions a settle begins ahead of the next claim while claims come
//! back full: taken by that claim, bounded by their lease, holding no
//! snapshot, and never left open once a claim comes back short.

use crate::support;

use std::time::Duration;

use sqlx::PgPool;
use support::{
    ORDER_EVENTS, claim_orders, drop_schema, named_pool, orders_relay, pool, publish_all, stage_to,
};
use tidings_core::ClaimedBatch;
use tidings_core::relay::RelayOptions;
use tidings_postgres::{ClaimMode, PgOutboxOptions, PgOutboxStore};
use tidings_testing::names::unique_name;

const LEASE: Duration = Duration::from_secs(60);

/// A locked store on up to four claim connections, which carry a name of
/// their own, and a connection to watch its sessions from.
struct Ahead {
    store: PgOutboxStore,
    admin: PgPool,
    application: String,
}

impl Ahead {
    async fn new() -> Self {
        let application = unique_name("tidings_ahead");
        let options = PgOutboxOptions::new()
            .claim_mode(ClaimMode::Locked)
            .claim_connections(4);
        let named = named_pool(&application).await;
        Self {
            store: support::store_on_options(named, options).await,
            admin: pool(1).await,
            application,
        }
    }

    /// The store's sessions idle in a transaction, with whether each
    /// holds a snapshot (`backend_xmin`) or a transaction id.
    async fn idle_in_transaction(&self) -> Vec<(bool, bool)> {
        sqlx::query_as(
            "select backend_xmin is not null, backend_xid is not null from pg_stat_activity \
             where application_name = $1 and state = 'idle in transaction'",
        )
        .bind(&self.application)
        .fetch_all(&self.admin)
        .await
        .unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_claims_settle_begins_the_next_claims_transaction() {
    let ahead = Ahead::new().await;
    let store = &ahead.store;
    stage_to(store, &ORDER_EVENTS, 5).await;

    let (first, second) = (
        claim_orders(store, 2, LEASE).await,
        claim_orders(store, 2, LEASE).await,
    );
    assert_eq!(publish_all(first).await + publish_all(second).await, 4);
    // Both settles began a transaction ahead: it holds nothing.
    let begun = ahead.idle_in_transaction().await;
    assert_eq!(begun, [(false, false), (false, false)]);

    // A short claim takes one of them, and ends the other.
    let last = claim_orders(store, 10, LEASE).await;
    assert_eq!(last.records().len(), 1);
    let open = ahead.idle_in_transaction().await;
    assert_eq!(open.len(), 1, "only the short claim's own: {open:?}");
    assert_eq!(publish_all(last).await, 1);
    assert!(ahead.idle_in_transaction().await.is_empty());
    assert_eq!(support::row_count(store).await, 0);
    drop_schema(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drained_backlog_leaves_no_transaction_open() {
    let ahead = Ahead::new().await;
    let store = &ahead.store;
    stage_to(store, &ORDER_EVENTS, 1_000).await;
    let (relay, broker) = orders_relay(store, RelayOptions::default().batch_size(50));

    let report = relay.drain().await.unwrap();
    assert_eq!(report.published, 1_000);
    assert_eq!(broker.depth("orders"), 1_000);
    let open = ahead.idle_in_transaction().await;
    assert!(open.is_empty(), "transactions left open: {open:?}");
    drop_schema(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_with_another_lease_does_not_keep_the_one_begun_ahead() {
    let ahead = Ahead::new().await;
    let store = &ahead.store;
    stage_to(store, &ORDER_EVENTS, 4).await;
    assert_eq!(publish_all(claim_orders(store, 1, LEASE).await).await, 1);
    assert_eq!(ahead.idle_in_transaction().await.len(), 1);

    // Taken by a claim with a short lease, the transaction must be one
    // that the server ends once idle past that lease, not past LEASE.
    let short = Duration::from_millis(300);
    let abandoned = claim_orders(store, 2, short).await;
    assert_eq!(abandoned.records().len(), 2);
    tokio::time::sleep(short + Duration::from_millis(700)).await;
    let again = claim_orders(store, 10, LEASE).await;
    assert_eq!(again.records().len(), 3, "the server released the rows");
    assert_eq!(publish_all(again).await, 3);
    drop(abandoned);
    assert_eq!(support::row_count(store).await, 0);
    drop_schema(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_goes_on_past_a_transaction_begun_ahead_that_the_server_ended() {
    // A relay that stalls in a backlog leaves the transaction begun ahead
    // idle past its lease; the server ends it with its connection.
    let ahead = Ahead::new().await;
    let store = &ahead.store;
    stage_to(store, &ORDER_EVENTS, 3).await;
    let short = Duration::from_millis(300);
    assert_eq!(publish_all(claim_orders(store, 1, short).await).await, 1);
    assert_eq!(ahead.idle_in_transaction().await.len(), 1);
    tokio::time::sleep(short + Duration::from_millis(700)).await;
    assert!(ahead.idle_in_transaction().await.is_empty());

    let batch = claim_orders(store, 10, short).await;
    assert_eq!(batch.records().len(), 2, "claimed on a new connection");
    assert_eq!(publish_all(batch).await, 2);
    assert_eq!(support::row_count(store).await, 0);
    drop_schema(store).await;
}
