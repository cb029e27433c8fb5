use std::collections::HashSet;
use std::time::Duration;

use sqlx::postgres::PgPoolOptions;
use tidings_postgres::wal::{WalOptions, WalStore};
use tidings_postgres::{LogTailing, PgOutboxOptions, PgOutboxStore, Pooling, TailMode};
use tidings_testing::eventually::eventually;
use tidings_testing::names::unique_name;
use tidings_testing::services::{logical_database_url, logical_pgbouncer_url, service_missing};

use crate::setup::{Recorder, drop_tailing, run_relay};
use crate::support::cluster::PrivateCluster;
use crate::support::{ORDER_EVENTS, SCHEMA_PREFIX, stage_to};

/// Stages through PgBouncer in transaction mode while the relay reads the
/// slot from the server itself.
async fn staged_through_a_pooler(mode: TailMode) {
    let url = logical_pgbouncer_url();
    let pool = PgPoolOptions::new()
        .max_connections(4)
        .connect(&url)
        .await
        .unwrap_or_else(|e| service_missing("PgBouncer before the logical cluster", &url, &e));
    let schema = unique_name(SCHEMA_PREFIX);
    let tailing = match mode {
        TailMode::Table => LogTailing::table(),
        TailMode::Messages => LogTailing::messages(),
    };
    let options = PgOutboxOptions::new()
        .schema(&schema)
        .pooling(Pooling::Transaction)
        .log_tailing(
            tailing
                .slot(format!("{schema}_slot"))
                .publication(format!("{schema}_pub")),
        );
    let store = PgOutboxStore::new(pool, options).expect("valid names");
    store.migrate().await.expect("migrate through the pooler");
    let wal = WalStore::start(
        store.clone(),
        WalOptions::new(&logical_database_url())
            .unwrap()
            .route(&ORDER_EVENTS),
    )
    .unwrap();
    let publisher = Recorder::publisher();
    let (cancel, relay) = run_relay(&wal, &ORDER_EVENTS, publisher.clone());
    for _ in 0..10 {
        stage_to(&store, &ORDER_EVENTS, 10).await;
    }
    let recorder = publisher.get_ref().clone();
    let seen = eventually(
        Duration::from_secs(20),
        || async { recorder.numbers() },
        |n| n.len() >= 100,
    )
    .await;
    assert_eq!(seen.len(), 100, "each event once");
    cancel.cancel();
    relay.await.unwrap().unwrap();
    drop(wal);
    drop_tailing(&store).await;
}

#[tokio::test]
async fn message_mode_stages_through_a_transaction_pooler() {
    staged_through_a_pooler(TailMode::Messages).await;
}

#[tokio::test]
async fn table_mode_stages_through_a_transaction_pooler() {
    staged_through_a_pooler(TailMode::Table).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_relay_reads_on_after_the_server_restarts() {
    let cluster = tokio::task::spawn_blocking(PrivateCluster::create_logical)
        .await
        .unwrap();
    let url = cluster.url();
    let pool = PgPoolOptions::new()
        .max_connections(4)
        .acquire_timeout(Duration::from_secs(5))
        .connect(&url)
        .await
        .unwrap();
    let options = PgOutboxOptions::new().log_tailing(LogTailing::messages());
    let store = PgOutboxStore::new(pool, options).unwrap();
    store.migrate().await.unwrap();
    let wal = WalStore::start(
        store.clone(),
        WalOptions::new(&url).unwrap().route(&ORDER_EVENTS),
    )
    .unwrap();
    let publisher = Recorder::publisher();
    let (cancel, relay) = run_relay(&wal, &ORDER_EVENTS, publisher.clone());
    stage_to(&store, &ORDER_EVENTS, 50).await;
    let recorder = publisher.get_ref().clone();
    eventually(
        Duration::from_secs(20),
        || async { recorder.numbers() },
        |n| n.len() >= 50,
    )
    .await;

    let restarting = &cluster;
    tokio::task::block_in_place(|| restarting.ctl("restart"));
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
    cancel.cancel();
    relay.await.unwrap().unwrap();
    drop(wal);
}
