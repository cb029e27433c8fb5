use std::collections::HashSet;
use std::time::Duration;

use tidings_postgres::{LogTailing, PgOutboxOptions, PgOutboxStore, Pooling, TailMode};
use tidings_testing::eventually::eventually;
use tidings_testing::services::logical_pgbouncer_url;

use crate::setup::{Tailed, tailing_store_on, wal_store_from};
use crate::support::cluster::PrivateCluster;
use crate::support::{ORDER_EVENTS, connect, stage_to};

/// Stages through PgBouncer in transaction mode while the relay reads the
/// slot from the server itself.
async fn staged_through_a_pooler(mode: TailMode) {
    let url = logical_pgbouncer_url();
    let pool = connect("PgBouncer before the logical cluster", &url, 4).await;
    let options = PgOutboxOptions::new().pooling(Pooling::Transaction);
    let mut t = Tailed::on(tailing_store_on(pool, mode, options).await);
    t.relay(&ORDER_EVENTS);
    for _ in 0..10 {
        stage_to(&t.store, &ORDER_EVENTS, 10).await;
    }
    assert_eq!(t.published(100).await.len(), 100, "each event once");
    t.finish().await;
}

in_both_modes!(
    staged_through_a_pooler:
    messages message_mode_stages_through_a_transaction_pooler,
    table table_mode_stages_through_a_transaction_pooler
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_relay_reads_on_after_the_server_restarts() {
    let cluster = PrivateCluster::made(PrivateCluster::create_logical).await;
    let url = cluster.url();
    let pool = cluster.pool(4).await;
    let options = PgOutboxOptions::new().log_tailing(LogTailing::messages());
    let store = PgOutboxStore::new(pool, options).unwrap();
    store.migrate().await.unwrap();
    let mut t = Tailed::reading(store.clone(), wal_store_from(&store, &url));
    t.relay(&ORDER_EVENTS);
    stage_to(&store, &ORDER_EVENTS, 50).await;
    t.published(50).await;

    tokio::task::block_in_place(|| cluster.ctl("restart"));
    // Staged once the server is back; the pool reconnects on its own.
    let staged = eventually(
        Duration::from_secs(30),
        || async {
            let Ok(mut ctx) = store.begin().await else {
                return false;
            };
            for n in 50..100u64 {
                ctx.outbox().stage(&ORDER_EVENTS, "test.event", &n).unwrap();
            }
            ctx.commit().await.is_ok()
        },
        |done| *done,
    )
    .await;
    assert!(staged, "staging works again after the restart");
    let recorder = &t.recorder;
    let distinct = eventually(
        Duration::from_secs(30),
        || async { recorder.numbers().into_iter().collect::<HashSet<_>>().len() },
        |n| *n == 100,
    )
    .await;
    assert_eq!(
        distinct, 100,
        "the relay read on after the restart, losing nothing"
    );
    // The cluster goes with everything in it.
    t.stop_relay().await;
}

#[tokio::test]
async fn migrate_refuses_a_server_without_logical_decoding() {
    // A cluster of the test's own, left at its default wal_level.
    let cluster = PrivateCluster::made(PrivateCluster::create).await;
    let pool = cluster.pool(2).await;
    let options = PgOutboxOptions::new().log_tailing(LogTailing::messages());
    let store = PgOutboxStore::new(pool, options).unwrap();
    let error = store.migrate().await.unwrap_err();
    let message = error.to_string();
    assert!(
        matches!(error, tidings_core::StoreError::Misconfigured(_)),
        "{message}"
    );
    assert!(message.contains("wal_level = logical"), "{message}");
    let tables: i64 =
        sqlx::query_scalar("select count(*) from pg_tables where schemaname = 'public'")
            .fetch_one(store.pool())
            .await
            .unwrap();
    assert_eq!(tables, 0, "nothing was created");
}
