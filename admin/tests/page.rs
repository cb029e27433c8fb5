//! The admin page in a real headless browser (Debian's Chromium driven
//! over WebDriver): it shows the backlog of a seeded route, a click on
//! "Requeue failed" with the token moves the failed rows back to pending,
//! a click on "Replay" sends a RabbitMQ dead letter back to its queue, and
//! a write without the token is refused with 401. A screenshot of the
//! page is saved as `admin-page.png` in Cargo's test scratch directory
//! (`target/tmp/` by default).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;
use tidings_admin::dead_letters::RabbitDeadLetters;
use tidings_admin::page::AdminPage;
use tidings_admin::tidings_postgres::sqlx::{self, AssertSqlSafe};
use tidings_admin::tidings_postgres::{PgOutboxOptions, PgOutboxStore};
use tidings_admin::tidings_rabbitmq::lapin::types::{AMQPValue, FieldTable, LongString};
use tidings_admin::tidings_rabbitmq::lapin::{BasicProperties, Connection, ConnectionProperties};
use tidings_admin::tidings_rabbitmq::{
    ConnectionOptions, QueueOptions, Topology, dead_letter_queue,
};
use tidings_admin::{Admin, AdminError};
use tidings_core::{ClaimRequest, ClaimedBatch, OutboxSpec, OutboxStore, Outcome, Settlement};
use tidings_testing::names::unique_name;
use tidings_testing::services::{amqp_url, postgres_pool, service_missing};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use uuid::Uuid;

static ORDERS: OutboxSpec<u32> = OutboxSpec::json("order-events").to_queue("orders");
const TOKEN: &str = "a-long-random-token";

/// A migrated store in a fresh schema with 3 pending and 2 failed rows.
async fn seeded_store() -> PgOutboxStore {
    let pool = postgres_pool(4).await;
    let options = PgOutboxOptions::new().schema(unique_name("tidings_page"));
    let store = PgOutboxStore::new(pool, options).unwrap();
    store.migrate().await.unwrap();
    let mut ctx = store.begin().await.unwrap();
    for n in 0..5 {
        ctx.outbox().stage(&ORDERS, "order.placed", &n).unwrap();
    }
    ctx.commit().await.unwrap();
    let request = ClaimRequest {
        route: ORDERS.route(),
        limit: 2,
        lease: Duration::from_secs(60),
        after: None,
    };
    let batch = store.claim(request).await.unwrap();
    let failed = batch
        .records()
        .iter()
        .map(|r| Settlement {
            event_id: r.envelope.event_id,
            outcome: Outcome::Failed {
                reason: "no exchange 'orders'".into(),
            },
        })
        .collect();
    batch.settle(failed).await.unwrap();
    store
}

/// A private chromedriver on a free port, stopped by its PID on drop.
struct Driver {
    child: Child,
    port: u16,
}

impl Driver {
    fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| service_missing("chromedriver", "PATH", &e));
        Self { child, port }
    }

    async fn client(&self) -> Client {
        // The WebDriver client speaks plain HTTP here, but its TLS stack
        // wants a provider chosen.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let capabilities = json!({
            "goog:chromeOptions": {
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900"]
            }
        });
        let url = format!("http://127.0.0.1:{}", self.port);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let mut builder = ClientBuilder::rustls().expect("tls");
            builder.capabilities(capabilities.as_object().unwrap().clone());
            match builder.connect(&url).await {
                Ok(client) => return client,
                Err(e) if tokio::time::Instant::now() > deadline => {
                    service_missing("chromedriver", &url, &e)
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A RabbitMQ queue of the test's own with one dead letter parked.
async fn queue_with_a_dead_letter() -> String {
    let queue = unique_name("tidings_page_orders");
    let options = QueueOptions::classic().expires(Duration::from_secs(120));
    Topology::new(ConnectionOptions::new(amqp_url()))
        .declare_queue(&queue, options)
        .await
        .unwrap_or_else(|e| service_missing("RabbitMQ", &amqp_url(), &e));
    let connection = Connection::connect(&amqp_url(), ConnectionProperties::default())
        .await
        .unwrap();
    let channel = connection.create_channel().await.unwrap();
    let mut headers = FieldTable::default();
    headers.insert(
        "x-dead-letter-reason".into(),
        AMQPValue::LongString(LongString::from("handler: poison")),
    );
    let properties = BasicProperties::default()
        .with_message_id(Uuid::new_v4().to_string().into())
        .with_headers(headers);
    let dlq = dead_letter_queue(&queue);
    channel
        .basic_publish(
            "".into(),
            dlq.as_str().into(),
            Default::default(),
            b"{}",
            properties,
        )
        .await
        .unwrap()
        .await
        .unwrap();
    let _ = connection.close(200, "OK".into()).await;
    queue
}

/// Serves the page on a free loopback port; returns its address.
async fn serve(store: PgOutboxStore, queue: &str) -> SocketAddr {
    let broker = RabbitDeadLetters::connect(&amqp_url()).await.unwrap();
    let page = AdminPage::new(Admin::new(store))
        .token(TOKEN)
        .dead_letters(broker, vec![queue.to_owned()]);
    let listener = page.bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(page.serve_on(listener, std::future::pending()));
    address
}

/// The status code of a bare HTTP request.
async fn status_of(address: SocketAddr, request: &str) -> String {
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    answer.lines().next().unwrap_or_default().to_owned()
}

async fn cell_text(client: &Client, selector: &str) -> String {
    client
        .find(Locator::Css(selector))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// Waits up to 10 s for `selector`'s text to contain `text`.
async fn wait_text(client: &Client, selector: &str, text: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(element) = client.find(Locator::Css(selector)).await
            && element.text().await.unwrap_or_default().contains(text)
        {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{selector} never showed {text:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_shows_the_backlog_and_requeues_with_the_token() {
    let store = seeded_store().await;
    let queue = queue_with_a_dead_letter().await;
    let address = serve(store.clone(), &queue).await;
    let body = r#"{"route":"order-events"}"#;
    let bare = format!(
        "POST /api/requeue HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    assert!(status_of(address, &bare).await.contains(" 401 "));
    let wrong = bare.replace(
        "Connection: close",
        "Authorization: Bearer guess\r\nConnection: close",
    );
    assert!(status_of(address, &wrong).await.contains(" 401 "));
    assert_eq!(store.stats("order-events").await.unwrap().failed, 2);

    let driver = Driver::start();
    let client = driver.client().await;
    client.goto(&format!("http://{address}/")).await.unwrap();
    wait_text(&client, "#routes tbody tr td:nth-child(1)", "order-events").await;
    assert_eq!(
        cell_text(&client, "#routes tbody tr td:nth-child(2)").await,
        "3"
    );
    assert_eq!(
        cell_text(&client, "#routes tbody tr td:nth-child(4)").await,
        "2"
    );
    wait_text(&client, "#failed tbody", "no exchange 'orders'").await;
    wait_text(&client, "#dead-letters tbody tr td:nth-child(3)", "1").await;
    let screenshot = client.screenshot().await.unwrap();
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("admin-page.png");
    std::fs::write(&path, screenshot).unwrap();

    client
        .find(Locator::Css("button.requeue"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_text(&client, "#message", "(401)").await;
    assert_eq!(store.stats("order-events").await.unwrap().failed, 2);
    client
        .find(Locator::Id("token"))
        .await
        .unwrap()
        .send_keys(TOKEN)
        .await
        .unwrap();
    client
        .find(Locator::Css("button.requeue"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_text(&client, "#message", "requeued 2 rows of order-events").await;
    wait_text(&client, "#routes tbody tr td:nth-child(2)", "5").await;
    let stats = store.stats("order-events").await.unwrap();
    assert_eq!((stats.pending, stats.failed), (5, 0));

    wait_text(&client, "#dead-letters tbody tr td:nth-child(3)", "1").await;
    client
        .find(Locator::Css("button.replay"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_text(&client, "#message", "replayed 1 of 1 dead letters").await;
    wait_text(&client, "#dead-letters tbody tr td:nth-child(3)", "0").await;
    client.close().await.unwrap();
    Topology::new(ConnectionOptions::new(amqp_url()))
        .delete_queue(&queue)
        .await
        .unwrap();

    let sql = format!("drop schema \"{}\" cascade", store.options().get_schema());
    sqlx::query(AssertSqlSafe(sql))
        .execute(store.pool())
        .await
        .unwrap();
}

#[tokio::test]
async fn a_non_loopback_address_needs_a_token() {
    let store = seeded_store().await;
    let page = AdminPage::new(Admin::new(store.clone()));
    let refused = page.bind("0.0.0.0:0".parse().unwrap()).await.unwrap_err();
    assert!(
        matches!(refused, AdminError::Invalid(ref m) if m.contains("without a token")),
        "{refused}"
    );
    let page = page.token(TOKEN);
    assert!(page.bind("0.0.0.0:0".parse().unwrap()).await.is_ok());
    let sql = format!("drop schema \"{}\" cascade", store.options().get_schema());
    sqlx::query(AssertSqlSafe(sql))
        .execute(store.pool())
        .await
        .unwrap();
}
