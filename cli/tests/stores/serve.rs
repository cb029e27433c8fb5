//! `tidings serve` with a stored inbox beside the store: the console's API
//! lists the inbox's consumer with its failed and retained messages, and
//! requeues a failed message with the token.

use std::time::{Duration, Instant};

use serde_json::Value;
use tidings_admin::tidings_postgres::PgOutboxStore;
use tidings_core::{OutboxSpec, OutboxStore};
use tidings_testing::faults::ChildProcess;
use tidings_testing::http::request;
use tidings_testing::services::database_url;

use crate::support::{drop_schema, pg_store, settle, stage};

/// What the stored inbox keeps: messages under the consumer's name.
static BILLING: OutboxSpec<u32> = OutboxSpec::json("billing").destination("orders");
const TOKEN: &str = "a-long-random-token";

#[tokio::test]
async fn serve_shows_and_requeues_a_stored_inboxs_messages() {
    let store = pg_store().await;
    let schema = store.options().get_schema().to_owned();
    let options = store.options().clone().table("inbox_messages");
    let kept = PgOutboxStore::new(store.pool().clone(), options).unwrap();
    kept.migrate().await.unwrap();
    let ids = stage(&kept, &BILLING, &["order.placed"; 2]).await;
    settle(
        &kept,
        &BILLING,
        &ids[..1],
        "handler: total must be positive",
    )
    .await;

    let address = free_address();
    let mut command = tokio::process::Command::new(assert_cmd::cargo::cargo_bin("tidings"));
    command
        .args(["--database-url", &database_url(), "--schema", &schema])
        .args(["serve", "--bind", &address.to_string(), "--token", TOKEN])
        .args(["--stored-inbox", "billing-inbox=inbox_messages"])
        .env_remove("TIDINGS_LOG");
    let mut child = ChildProcess::spawn(command).expect("start tidings serve");

    let inboxes = answer_of(address, "/api/stored-inboxes").await;
    assert_eq!(inboxes[0]["name"], "billing-inbox", "{inboxes}");
    let billing = &inboxes[0]["routes"][0];
    assert_eq!(billing["route"], "billing", "{inboxes}");
    assert_eq!(
        (&billing["failed"], &billing["retained"]),
        (&1.into(), &1.into()),
        "{inboxes}"
    );
    let failed = answer_of(address, "/api/failed?route=billing&stored=billing-inbox").await;
    assert_eq!(failed[0]["event_id"], ids[0].to_string(), "{failed}");
    assert_eq!(failed[0]["last_error"], "handler: total must be positive");

    let body = format!(
        r#"{{"route":"billing","stored":"billing-inbox","ids":["{}"]}}"#,
        ids[0]
    );
    let (status, answer) = request(
        address,
        "POST",
        "/api/failed/requeue",
        Some(&body),
        Some(TOKEN),
    )
    .await;
    assert!(status.contains(" 200 "), "{status} {answer}");
    let stats = kept.stats("billing").await.unwrap();
    assert_eq!((stats.pending, stats.failed), (1, 0));

    child.kill().await.unwrap();
    drop_schema(&store).await;
}

/// A loopback address nothing listens on yet.
fn free_address() -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}

/// The JSON `path` answers with, once the console listens (within 30 s).
async fn answer_of(address: std::net::SocketAddr, path: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    while tokio::net::TcpStream::connect(address).await.is_err() {
        assert!(
            Instant::now() < deadline,
            "tidings serve never listened on {address}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (status, body) = request(address, "GET", path, None, None).await;
    assert!(status.contains(" 200 "), "{path}: {status} {body}");
    serde_json::from_str(&body).unwrap()
}
