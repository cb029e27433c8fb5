//! Staging, relays, wake-ups and the inbox behind a real PgBouncer in
//! transaction mode (`PGBOUNCER_URL`), which moves a client to another
//! server session after every transaction and keeps no prepared statement
//! across: the store with `Pooling::Transaction` works there, opens no
//! connection beyond its pool, and refuses locked claims that would take
//! the whole pool. What the tests read back, they read directly.

use crate::support;

use std::time::{Duration, Instant};

use futures::future::join_all;
use sqlx::postgres::PgPoolOptions;
use sqlx::{AssertSqlSafe, Connection, PgConnection, PgPool, Row};
use support::billing::{invoice_all, mark_billing, rows};
use support::pooler::{
    direct_options, pooled_options, pooled_pool, pooled_pool_named, pooled_store_on,
};
use support::{LISTENING_BACKENDS, ORDER_EVENTS, SCHEMA_PREFIX, drop_schema, run_sql};
use tidings_core::memory::{MemoryBroker, MemoryBrokerOptions};
use tidings_core::relay::{Relay, RelayOptions};
use tidings_core::{InboxMark, InboxPurge, InboxStore, OutboxStore, QueueSpec, StoreError, Wakeup};
use tidings_postgres::{
    ClaimMode, CommitError, PgOutboxOptions, PgOutboxStore, PgWakeupSource, Pooling,
};
use tidings_testing::names::{consumer_name, unique_name};
use tidings_testing::services::{pgbouncer_url, service_missing};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

static ORDERS: QueueSpec<u64> = QueueSpec::json("orders");

/// A store behind the pooler on a pool of 8, claiming in `mode`.
async fn store(mode: ClaimMode) -> PgOutboxStore {
    let pool = pooled_pool_named(8, &unique_name("tidings_pooled")).await;
    pooled_store_on(pool, PgOutboxOptions::new().claim_mode(mode)).await
}

/// A pool straight to the server, to read back what the store wrote.
async fn direct() -> PgPool {
    support::pool(2).await
}

async fn count(direct: &PgPool, store: &PgOutboxStore, table: &str) -> i64 {
    let schema = store.options().get_schema();
    let sql = format!("select count(*) from \"{schema}\".\"{table}\"");
    sqlx::query_scalar(AssertSqlSafe(sql))
        .fetch_one(direct)
        .await
        .unwrap()
}

/// Stages `commits` transactions of `per_commit` events from each of
/// `tasks` tasks at once.
async fn stage_concurrently(store: &PgOutboxStore, tasks: u64, commits: u64, per_commit: u64) {
    let stagers = (0..tasks).map(|task| async move {
        for commit in 0..commits {
            let mut ctx = store.begin().await.expect("begin through the pooler");
            for n in 0..per_commit {
                let number = (task * commits + commit) * per_commit + n;
                ctx.outbox()
                    .stage(&ORDER_EVENTS, "test.event", &number)
                    .unwrap();
            }
            ctx.commit().await.expect("commit through the pooler");
        }
    });
    join_all(stagers).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn staging_works_through_the_pooler_in_every_kind_of_context() {
    let store = store(ClaimMode::Locked).await;
    let direct = direct().await;
    store.verify().await.expect("verify through the pooler");
    assert_eq!(store.migrate().await.unwrap(), 0, "already current");

    // Eight tasks at once, lone events and several per transaction.
    stage_concurrently(&store, 8, 10, 1).await;
    stage_concurrently(&store, 8, 5, 3).await;

    // On a connection the caller holds, and in a transaction it opened.
    let mut conn = store.pool().acquire().await.unwrap();
    let mut ctx = store.begin_on(&mut conn).await.unwrap();
    ctx.outbox().stage(&ORDER_EVENTS, "test.event", &1).unwrap();
    ctx.commit().await.unwrap();
    drop(conn);
    let tx = store.pool().begin().await.unwrap();
    let mut ctx = store.context(tx);
    ctx.outbox().stage(&ORDER_EVENTS, "test.event", &2).unwrap();
    ctx.outbox().stage(&ORDER_EVENTS, "test.event", &3).unwrap();
    let tx = ctx.into_transaction().await.unwrap();
    tx.commit().await.unwrap();

    // A rolled-back context leaves nothing.
    let mut ctx = store.begin().await.unwrap();
    ctx.outbox().stage(&ORDER_EVENTS, "test.event", &4).unwrap();
    ctx.rollback().await.unwrap();

    assert_eq!(count(&direct, &store, "tidings_outbox").await, 80 + 120 + 3);
    let stats = store.stats(ORDER_EVENTS.name()).await.unwrap();
    assert_eq!(stats.pending, 203);
    drop_schema(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relays_drain_through_the_pooler_while_staging_goes_on_in_each_claim_mode() {
    for mode in [ClaimMode::Locked, ClaimMode::Leased] {
        let store = store(mode).await;
        let direct = direct().await;
        let broker = MemoryBroker::new();
        broker.declare_queue(ORDERS.name());
        let config = RelayOptions::default().batch_size(50).publish_window(10);
        let relays: Vec<_> = (0..2)
            .map(|_| {
                Relay::new(store.clone(), broker.clone(), &ORDER_EVENTS)
                    .unwrap()
                    .options(config)
            })
            .collect();
        let staged = 8 * 10 * 5;
        let staging = stage_concurrently(&store, 8, 10, 5);
        let draining = join_all(relays.iter().map(|relay| async move {
            let mut published = 0;
            for _ in 0..20 {
                published += relay
                    .drain()
                    .await
                    .expect("drain through the pooler")
                    .published;
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            published
        }));
        let ((), published) = tokio::join!(staging, draining);
        let mut published: usize = published.into_iter().sum();
        for relay in &relays {
            published += relay.drain().await.unwrap().published;
        }
        assert_eq!(published, staged, "{mode:?}");
        assert_eq!(broker.depth(ORDERS.name()), staged, "{mode:?}");
        assert_eq!(
            count(&direct, &store, "tidings_outbox").await,
            0,
            "{mode:?}"
        );
        let claims = count(&direct, &store, "tidings_outbox_claims").await;
        assert_eq!(claims, 0, "{mode:?}: every claim record settled");
        drop_schema(&store).await;
    }
}

/// Runs a relay that polls only every 30 s, woken by `wakeup`, and the
/// store's listener; returns the broker it publishes to.
fn run_relay(store: &PgOutboxStore, cancel: &CancellationToken) -> MemoryBroker {
    let broker = MemoryBroker::new();
    broker.declare_queue(ORDERS.name());
    let wakeup = Wakeup::new();
    let config = RelayOptions::default().poll_interval(Duration::from_secs(30));
    let relay = Relay::new(store.clone(), broker.clone(), &ORDER_EVENTS)
        .unwrap()
        .options(config)
        .wakeup(wakeup.clone());
    let token = cancel.clone();
    tokio::spawn(async move { relay.run(token).await });
    store.wakeup_source(wakeup).spawn(cancel.clone());
    broker
}

/// Commits one event through `store` and waits for the relay to publish
/// it; fails the test after `within`.
async fn commit_and_wait(store: &PgOutboxStore, broker: &MemoryBroker, within: Duration) {
    let before = broker.depth(ORDERS.name());
    support::stage_to(store, &ORDER_EVENTS, 1).await;
    let started = Instant::now();
    while broker.depth(ORDERS.name()) == before {
        assert!(
            started.elapsed() < within,
            "the relay was not woken; it polls only every 30 s"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_on_a_direct_connection_hears_commits_made_through_the_pooler() {
    let pool = pooled_pool_named(8, &unique_name("tidings_pooled")).await;
    let options = PgOutboxOptions::new().listen_options(direct_options());
    let store = pooled_store_on(pool, options).await;
    // A second store on the table, standing for a producer in another
    // process: only a NOTIFY reaches the relay from it.
    let other = PgOutboxStore::new(store.pool().clone(), store.options().clone()).unwrap();
    let direct = direct().await;
    let cancel = CancellationToken::new();
    let broker = run_relay(&store, &cancel);

    let started = Instant::now();
    while listening(&direct, &store).await.is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "never listened"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    commit_and_wait(&other, &broker, Duration::from_secs(5)).await;
    commit_and_wait(&store, &broker, Duration::from_secs(5)).await;
    cancel.cancel();
    drop_schema(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_direct_connection_the_listener_still_hears_its_own_process() {
    let store = store(ClaimMode::Locked).await;
    let direct = direct().await;
    let cancel = CancellationToken::new();
    let broker = run_relay(&store, &cancel);
    commit_and_wait(&store, &broker, Duration::from_secs(5)).await;
    commit_and_wait(&store, &broker, Duration::from_secs(5)).await;
    // It never listens, so it takes no presence lock either.
    assert!(listening(&direct, &store).await.is_empty());
    cancel.cancel();
    drop_schema(&store).await;
}

/// The backends holding a listener's presence lock on the store's channel.
async fn listening(direct: &PgPool, store: &PgOutboxStore) -> Vec<i32> {
    sqlx::query_scalar(LISTENING_BACKENDS)
        .bind(PgWakeupSource::PRESENCE_LOCK_SPACE)
        .bind(store.channel())
        .fetch_all(direct)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inbox_marks_and_purges_through_the_pooler() {
    let store = store(ClaimMode::Locked).await;
    let direct = direct().await;
    let inbox = store.inbox();
    let event = Uuid::now_v7();

    let mut tx = inbox.begin().await.unwrap();
    assert_eq!(
        mark_billing(&store, &mut tx, event).await,
        InboxMark::Fresh(())
    );
    tx.outbox()
        .stage(&ORDER_EVENTS, "invoice.created", &1)
        .unwrap();
    inbox.commit(tx).await.unwrap();

    let mut tx = inbox.begin().await.unwrap();
    assert_eq!(
        mark_billing(&store, &mut tx, event).await,
        InboxMark::Duplicate
    );
    let one: i32 = sqlx::query_scalar("select 1")
        .persistent(false)
        .fetch_one(tx.tx())
        .await
        .unwrap();
    assert_eq!(one, 1, "the transaction still works after a duplicate");
    inbox.rollback(tx).await.unwrap();
    assert_eq!(count(&direct, &store, "tidings_inbox").await, 1);
    assert_eq!(count(&direct, &store, "tidings_outbox").await, 1);

    let purged = inbox
        .purge_older_than(&consumer_name("billing"), Duration::ZERO, 100)
        .await
        .unwrap();
    assert_eq!(purged, 1);
    assert_eq!(count(&direct, &store, "tidings_inbox").await, 0);
    drop_schema(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_with_the_inbox_behind_the_pooler_handles_each_event_once() {
    let store = store(ClaimMode::Locked).await;
    let direct = direct().await;
    let invoices = format!("\"{}\".invoices", store.options().get_schema());
    let create = format!("create table {invoices} (order_id bigint primary key)");
    run_sql(&direct, create).await;
    stage_concurrently(&store, 4, 10, 1).await;

    let broker = MemoryBroker::with_options(MemoryBrokerOptions::default().duplicate_every(4));
    broker.declare_queue(ORDERS.name());
    let relay = Relay::new(store.clone(), broker.clone(), &ORDER_EVENTS).unwrap();
    assert_eq!(relay.drain().await.unwrap().published, 40);

    let invoiced = invoice_all(&store, &direct, &broker, &invoices, 40).await;
    assert_eq!(rows(&direct, &invoices).await, 40);
    assert_eq!(invoiced.processed, 40);
    assert!(invoiced.duplicates > 0, "{invoiced:?}");
    assert_eq!(count(&direct, &store, "tidings_inbox").await, 40);
    drop_schema(&store).await;
}

/// The pooler's clients named `application`, read on its console.
async fn clients_named(console: &mut PgConnection, application: &str) -> usize {
    let rows = sqlx::raw_sql("show clients")
        .fetch_all(console)
        .await
        .unwrap();
    rows.iter()
        .filter(|row| {
            row.try_get::<String, _>("application_name").ok().as_deref() == Some(application)
        })
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_opens_no_connection_beyond_its_pool() {
    let application = unique_name("tidings_pool_only");
    let pool = pooled_pool_named(4, &application).await;
    let options = PgOutboxOptions::new().claim_connections(2);
    let store = pooled_store_on(pool, options).await;
    let console_options = pooled_options("tidings_console").database("pgbouncer");
    let mut console = PgConnection::connect_with(&console_options)
        .await
        .unwrap_or_else(|e| {
            let hint = "(its console needs `admin_users = postgres`)";
            service_missing(
                "PgBouncer console",
                &format!("{} {hint}", pgbouncer_url()),
                &e,
            )
        });

    // Locked claims with their records, hints to a listener elsewhere
    // (looked up and sent), staging and the inbox, all at once.
    let other_process = PgOutboxStore::new(store.pool().clone(), store.options().clone()).unwrap();
    let cancel = CancellationToken::new();
    let direct = PgPoolOptions::new()
        .max_connections(1)
        .connect_lazy_with(direct_options());
    PgWakeupSource::new(direct, store.channel(), Wakeup::new()).spawn(cancel.clone());
    let broker = MemoryBroker::new();
    broker.declare_queue(ORDERS.name());
    let relay = Relay::new(store.clone(), broker.clone(), &ORDER_EVENTS)
        .unwrap()
        .options(RelayOptions::default().batch_size(20).publish_window(5));
    let work = async {
        for round in 0..10 {
            stage_concurrently(&other_process, 4, 2, 5).await;
            relay.drain().await.unwrap();
            let mut tx = store.inbox().begin().await.unwrap();
            mark_billing(&store, &mut tx, Uuid::now_v7()).await;
            store.inbox().commit(tx).await.unwrap();
            tracing::debug!(round, "round done");
        }
    };
    let watch = async {
        let mut most = 0;
        loop {
            most = most.max(clients_named(&mut console, &application).await);
            tokio::time::sleep(Duration::from_millis(5)).await;
            if cancel.is_cancelled() {
                return most;
            }
        }
    };
    let (most, ()) = tokio::join!(watch, async {
        work.await;
        cancel.cancel();
    });
    assert_eq!(broker.depth(ORDERS.name()), 400);
    assert!(most >= 1, "the console saw the pool's clients");
    assert!(most <= 4, "{most} clients of a pool of 4");
    drop_schema(&store).await;
}

#[tokio::test]
async fn locked_claims_that_would_take_the_whole_pool_are_refused() {
    let pool = PgPoolOptions::new()
        .max_connections(4)
        .connect_lazy_with(pooled_options("tidings_refused"));
    let pooled = PgOutboxOptions::new().pooling(Pooling::Transaction);
    let refused = PgOutboxStore::new(pool.clone(), pooled.clone().claim_connections(4));
    match refused {
        Err(StoreError::Invalid(message)) => {
            assert!(message.contains("claim_connections (4)"), "{message}");
            assert!(message.contains("max_connections (4)"), "{message}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    for fits in [
        pooled.clone().claim_connections(3),
        pooled
            .clone()
            .claim_connections(4)
            .claim_mode(ClaimMode::Leased),
        PgOutboxOptions::new().claim_connections(4),
    ] {
        PgOutboxStore::new(pool.clone(), fits).expect("these fit");
    }
}

/// A store on a pool through the pooler that was not told so: it
/// prepares its statements by name.
fn unannounced(pool: PgPool, schema: &str) -> PgOutboxStore {
    let options = PgOutboxOptions::new().schema(schema);
    PgOutboxStore::new(pool, options).expect("valid options")
}

/// Whether `error` is the misconfiguration that names the fix.
fn names_the_fix(error: &StoreError) -> bool {
    matches!(error, StoreError::Misconfigured(m) if m.contains("Pooling::Transaction"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_not_told_of_the_pooler_fails_at_migrate_naming_the_fix() {
    let pool = pooled_pool(4).await;
    let store = unannounced(pool, &unique_name(SCHEMA_PREFIX));
    let error = store
        .migrate()
        .await
        .expect_err("a pooler the store was not told of");
    assert!(names_the_fix(&error), "{error}");
    let error = store.verify().await.expect_err("the same at verify");
    assert!(names_the_fix(&error), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_not_told_of_the_pooler_fails_at_staging_naming_the_fix() {
    // Migrated as it should be; staged through a store that was not told.
    let migrated = store(ClaimMode::Locked).await;
    let pool = pooled_pool(4).await;
    let store = unannounced(pool.clone(), migrated.options().get_schema());
    let mut conns = [pool.acquire().await.unwrap(), pool.acquire().await.unwrap()];
    let mut failure = None;
    'rounds: for _ in 0..10 {
        // Each connection prepares the store's statements by name in turn,
        // on whichever server session the pooler hands it.
        for conn in &mut conns {
            let outcome = match store.begin_on(conn).await {
                Ok(mut ctx) => {
                    ctx.outbox().stage(&ORDER_EVENTS, "test.event", &1).unwrap();
                    ctx.commit().await
                }
                Err(error) => Err(CommitError::Store(error)),
            };
            if let Err(error) = outcome {
                failure = Some(error);
                break 'rounds;
            }
        }
    }
    match failure {
        Some(CommitError::Store(error)) => assert!(names_the_fix(&error), "{error}"),
        other => panic!("expected a misconfiguration naming the fix, got {other:?}"),
    }
    drop(conns);
    drop_schema(&migrated).await;
}
