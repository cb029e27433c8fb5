//! The store over TLS with `sslmode=verify-full` and a private root
//! certificate, on a throwaway cluster with `ssl = on` and a certificate
//! for `localhost` signed by the setup command's test CA; a wrong root or
//! host name fails at once, saying the certificate was refused.

use crate::support;

use std::str::FromStr;
use std::time::{Duration, Instant};

use sqlx::postgres::{PgConnectOptions, PgPoolOptions, PgSslMode};
use sqlx::{PgPool, Row};
use support::cluster::PrivateCluster;
use support::{LISTENING_BACKENDS, ORDER_EVENTS, claim_orders, publish_all};
use tidings_core::{ClaimedBatch, Wakeup};
use tidings_postgres::{PgOutboxOptions, PgOutboxStore, PgWakeupSource};
use tidings_testing::services::{service_missing, tls_file};
use tokio_util::sync::CancellationToken;

/// A refusal must come this fast: no waiting out a timeout.
const AT_ONCE: Duration = Duration::from_secs(3);

async fn cluster() -> PrivateCluster {
    let (cert, key) = (tls_file("server.pem"), tls_file("server.key"));
    PrivateCluster::made(move || PrivateCluster::create_with_tls(&cert, &key)).await
}

async fn pool(options: PgConnectOptions) -> Result<PgPool, sqlx::Error> {
    PgPoolOptions::new()
        .max_connections(4)
        .acquire_timeout(Duration::from_secs(10))
        .connect_with(options)
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_on_a_verify_full_pool_stages_relays_and_listens_over_tls() {
    let cluster = cluster().await;
    let ca = tls_file("ca.pem");
    // The URL form a DATABASE_URL would carry.
    let url = format!(
        "postgres://postgres@localhost:{}/postgres?sslmode=verify-full&sslrootcert={}",
        cluster.port(),
        ca.display()
    );
    let staging = pool(PgConnectOptions::from_str(&url).unwrap())
        .await
        .unwrap_or_else(|e| service_missing("private PostgreSQL cluster over TLS", &url, &e));
    // The same settings through the builder.
    let options = PgConnectOptions::new()
        .host("localhost")
        .port(cluster.port())
        .username("postgres")
        .database("postgres")
        .ssl_mode(PgSslMode::VerifyFull)
        .ssl_root_cert(&ca);
    let relaying = pool(options).await.expect("verify-full pool");

    let options = PgOutboxOptions::new().schema("tls");
    let stager = PgOutboxStore::new(staging, options.clone()).unwrap();
    stager.migrate().await.unwrap();
    let relay = PgOutboxStore::new(relaying, options).unwrap();

    // The listener's and the hints' connections are opened outside the
    // pools, with their settings.
    let wakeup = Wakeup::new();
    let cancel = CancellationToken::new();
    let listener = relay.wakeup_source(wakeup.clone()).spawn(cancel.clone());
    wait_until_listening(&relay).await;
    let notified = tokio::spawn({
        let wakeup = wakeup.clone();
        async move { wakeup.notified().await }
    });
    let mut ctx = stager.begin().await.unwrap();
    ctx.outbox()
        .stage(&ORDER_EVENTS, "order.placed", &1_u64)
        .unwrap();
    ctx.commit().await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), notified)
        .await
        .expect("woken by the other store's commit over TLS")
        .unwrap();

    let batch = claim_orders(&relay, 10, Duration::from_secs(60)).await;
    assert_eq!(batch.records().len(), 1);
    publish_all(batch).await;

    // Every client session on this private cluster is ours, and encrypted.
    let sessions = sqlx::query(
        "select count(*) as total, count(*) filter (where s.ssl) as encrypted
         from pg_stat_activity a join pg_stat_ssl s using (pid)
         where a.backend_type = 'client backend'",
    )
    .fetch_one(stager.pool())
    .await
    .unwrap();
    let (total, encrypted): (i64, i64) = (sessions.get("total"), sessions.get("encrypted"));
    assert!(total >= 3, "pools and listener: {total} sessions");
    assert_eq!(encrypted, total, "a session in the clear");

    cancel.cancel();
    listener.await.unwrap();
    stager.pool().close().await;
    relay.pool().close().await;
    cluster.remove().await;
}

/// Waits until `store`'s listener holds its presence lock.
async fn wait_until_listening(store: &PgOutboxStore) {
    let started = Instant::now();
    loop {
        let listening: Vec<i32> = sqlx::query_scalar(LISTENING_BACKENDS)
            .bind(PgWakeupSource::PRESENCE_LOCK_SPACE)
            .bind(store.channel())
            .fetch_all(store.pool())
            .await
            .unwrap();
        if !listening.is_empty() {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the listener never listened"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_root_or_host_name_is_refused_at_once() {
    let cluster = cluster().await;
    let verify_full = |host: &str, root: &str| {
        PgConnectOptions::new()
            .host(host)
            .port(cluster.port())
            .username("postgres")
            .database("postgres")
            .ssl_mode(PgSslMode::VerifyFull)
            .ssl_root_cert(tls_file(root))
    };
    // The right root and name connect, so the failures below are theirs.
    let good = pool(verify_full("localhost", "ca.pem"))
        .await
        .unwrap_or_else(|e| {
            service_missing("private PostgreSQL cluster over TLS", "localhost", &e)
        });
    good.close().await;

    for (host, root, reason) in [
        ("localhost", "other-ca.pem", "UnknownIssuer"),
        ("127.0.0.1", "ca.pem", "not valid for name"),
    ] {
        let started = Instant::now();
        let error = pool(verify_full(host, root))
            .await
            .expect_err("the certificate must be refused");
        assert!(started.elapsed() < AT_ONCE, "took {:?}", started.elapsed());
        let text = error.to_string();
        assert!(
            text.contains("invalid peer certificate") && text.contains(reason),
            "{host} with {root}: {text}"
        );
    }
    cluster.remove().await;
}
