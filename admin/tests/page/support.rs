//! What the console tests share: a seeded store, a RabbitMQ queue with a
//! dead letter, the page served on a free port, a private chromedriver,
//! waits, and screenshots.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};
use tidings_admin::page::AdminPage;
use tidings_admin::tidings_postgres::{PgOutboxOptions, PgOutboxStore};
use tidings_admin::tidings_rabbitmq::lapin::types::{AMQPValue, FieldTable, LongString};
use tidings_admin::tidings_rabbitmq::lapin::{BasicProperties, Connection, ConnectionProperties};
use tidings_admin::tidings_rabbitmq::{
    ConnectionOptions, QueueOptions, Topology, dead_letter_queue,
};
use tidings_core::{ClaimRequest, ClaimedBatch, OutboxSpec, OutboxStore, Outcome, Settlement};
use tidings_testing::names::unique_name;
use tidings_testing::services::{amqp_url, postgres_pool, service_missing};
use uuid::Uuid;

pub(crate) static ORDERS: OutboxSpec<u32> = OutboxSpec::json("order-events").destination("orders");
pub(crate) const TOKEN: &str = "a-long-random-token";

/// A migrated store in a fresh schema with `pending` pending rows and
/// `failed` failed ones.
pub(crate) async fn seeded_store(pending: u32, failed: u32) -> PgOutboxStore {
    let pool = postgres_pool(4).await;
    let options = PgOutboxOptions::new().schema(unique_name("tidings_page"));
    let store = PgOutboxStore::new(pool, options).unwrap();
    store.migrate().await.unwrap();
    seed(&store, &ORDERS, pending, failed, "no exchange 'orders'").await;
    store
}

/// Stages `pending + failed` events of `spec` in `store` and fails
/// `failed` of them, each with `reason` and its number.
pub(crate) async fn seed(
    store: &PgOutboxStore,
    spec: &'static OutboxSpec<u32>,
    pending: u32,
    failed: u32,
    reason: &str,
) {
    stage_of(store, spec, pending + failed).await;
    if failed > 0 {
        let request = ClaimRequest {
            route: spec.route(),
            limit: failed as usize,
            lease: Duration::from_secs(60),
            after: None,
        };
        let batch = store.claim(request).await.unwrap();
        let outcomes = batch
            .records()
            .iter()
            .enumerate()
            .map(|(n, r)| Settlement {
                event_id: r.envelope.event_id,
                outcome: Outcome::Failed {
                    reason: format!("{reason} (attempt {n})"),
                },
            })
            .collect();
        batch.settle(outcomes).await.unwrap();
    }
}

/// Stages `count` more order events.
pub(crate) async fn stage(store: &PgOutboxStore, count: u32) {
    stage_of(store, &ORDERS, count).await;
}

async fn stage_of(store: &PgOutboxStore, spec: &'static OutboxSpec<u32>, count: u32) {
    let mut ctx = store.begin().await.unwrap();
    for n in 0..count {
        ctx.outbox().stage(spec, "order.placed", &n).unwrap();
    }
    ctx.commit().await.unwrap();
}

/// Drops the store's schema, trying again where the page's last reads,
/// still ending, make the drop a deadlock's victim.
pub(crate) async fn drop_store(store: &PgOutboxStore) {
    let schema = store.options().get_schema();
    tidings_testing::services::drop_schema(store.pool(), schema).await;
}

/// A page over `store` sampling every 200 ms and refreshing every second,
/// so a test sees both move.
pub(crate) fn quick_page(store: PgOutboxStore) -> AdminPage<PgOutboxStore> {
    AdminPage::new(tidings_admin::Admin::new(store.clone()))
        .sample_every(Duration::from_millis(200))
        .refresh(Duration::from_secs(1))
        .context("database", "postgres://postgres@127.0.0.1:5432/test")
        .context("schema", store.options().get_schema().to_owned())
}

/// Serves `page` on a free loopback port; returns its address.
pub(crate) async fn serve(page: AdminPage<PgOutboxStore>) -> SocketAddr {
    let listener = page.bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(page.serve_on(listener, std::future::pending()));
    address
}

/// A RabbitMQ queue of the test's own, with `letters` dead letters parked
/// in its dead-letter queue as a consumer parks them; returns the queue
/// and the letters' ids.
pub(crate) async fn queue_with_dead_letters(letters: usize) -> (String, Vec<String>) {
    let queue = unique_name("tidings_page_orders");
    let options = QueueOptions::classic().expires(Duration::from_secs(300));
    Topology::new(ConnectionOptions::new(amqp_url()))
        .declare_queue(&queue, options)
        .await
        .unwrap_or_else(|e| service_missing("RabbitMQ", &amqp_url(), &e));
    let connection = Connection::connect(&amqp_url(), ConnectionProperties::default())
        .await
        .unwrap();
    let channel = connection.create_channel().await.unwrap();
    let dlq = dead_letter_queue(&queue);
    let mut ids = Vec::new();
    for n in 0..letters {
        let id = Uuid::new_v4().to_string();
        let mut headers = FieldTable::default();
        let text = |s: &str| AMQPValue::LongString(LongString::from(s));
        headers.insert(
            "x-dead-letter-reason".into(),
            text(&format!("handler: total must be positive (order {n})")),
        );
        headers.insert("ce-type".into(), text("order.placed"));
        let sent = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
            - 90;
        let properties = BasicProperties::default()
            .with_message_id(id.as_str().into())
            .with_type("order.placed".into())
            .with_timestamp(sent)
            .with_content_type("application/json".into())
            .with_headers(headers);
        let body = format!(r#"{{"order":{n},"total":-5}}"#);
        channel
            .basic_publish(
                "".into(),
                dlq.as_str().into(),
                Default::default(),
                body.as_bytes(),
                properties,
            )
            .await
            .unwrap()
            .await
            .unwrap();
        ids.push(id);
    }
    let _ = connection.close(200, "OK".into()).await;
    (queue, ids)
}

/// Deletes the test's queue and its dead-letter queue.
pub(crate) async fn delete_queue(queue: &str) {
    Topology::new(ConnectionOptions::new(amqp_url()))
        .delete_queue(queue)
        .await
        .unwrap();
}

pub(crate) use tidings_testing::http::request as http;

/// A private chromedriver on a free port, stopped by its PID on drop.
pub(crate) struct Driver {
    child: Child,
    port: u16,
}

impl Driver {
    pub(crate) fn start() -> Self {
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

    /// A headless Chromium session at a laptop's window size.
    pub(crate) async fn client(&self) -> Client {
        // The WebDriver client speaks plain HTTP here, but its TLS stack
        // wants a provider chosen.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let capabilities = json!({
            "goog:chromeOptions": {
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,1000"]
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
                    service_missing("chromedriver (bash scripts/setup-services.sh)", &url, &e)
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

/// Saves a screenshot of the whole page as `name` under Cargo's test
/// scratch directory (`target/tmp/`).
pub(crate) async fn screenshot(client: &Client, name: &str) -> PathBuf {
    let height = eval(
        client,
        "window.scrollTo(0, 0); return document.documentElement.scrollHeight",
    )
    .await;
    let height = height.as_u64().unwrap_or(1000).clamp(600, 4000);
    client
        .set_window_size(1280, height as u32 + 100)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    eval(client, "window.scrollTo(0, 0); return true").await;
    let png = client.screenshot().await.unwrap();
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&path, png).unwrap();
    path
}

/// The value `script` returns in the page.
pub(crate) async fn eval(client: &Client, script: &str) -> Value {
    client.execute(script, vec![]).await.unwrap()
}

/// Waits up to 15 s for `script` to return true.
pub(crate) async fn wait_for(client: &Client, script: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        if eval(client, script).await == Value::Bool(true) {
            return;
        }
        if tokio::time::Instant::now() > deadline {
            let message = text_of(client, "#message").await;
            panic!("never true: {script}; the page says {message:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits up to 15 s for the failed-rows table to list `rows` rows.
pub(crate) async fn wait_failed_rows(client: &Client, rows: usize) {
    let script =
        format!("return document.querySelectorAll('#failed tbody tr[data-id]').length === {rows}");
    wait_for(client, &script).await;
}

/// Types the write token into the page's token field.
pub(crate) async fn enter_token(client: &Client) {
    let field = client.find(Locator::Id("token")).await.unwrap();
    field.send_keys(TOKEN).await.unwrap();
}

/// Waits up to 15 s for `selector`'s text to contain `text`.
pub(crate) async fn wait_text(client: &Client, selector: &str, text: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        if let Ok(element) = client.find(Locator::Css(selector)).await
            && element.text().await.unwrap_or_default().contains(text)
        {
            return;
        }
        let now = text_of(client, selector).await;
        assert!(
            tokio::time::Instant::now() < deadline,
            "{selector} never showed {text:?}; it shows {now:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The text of `selector`, empty when absent.
pub(crate) async fn text_of(client: &Client, selector: &str) -> String {
    match client.find(Locator::Css(selector)).await {
        Ok(element) => element.text().await.unwrap_or_default(),
        Err(_) => String::new(),
    }
}

/// How many elements match `selector`.
pub(crate) async fn count(client: &Client, selector: &str) -> usize {
    client.find_all(Locator::Css(selector)).await.unwrap().len()
}

/// Clicks `selector`, finding it again when a refresh redrew it between
/// the find and the click.
pub(crate) async fn click(client: &Client, selector: &str) {
    for _ in 0..20 {
        let element = client.find(Locator::Css(selector)).await.unwrap();
        match element.click().await {
            Ok(_) => return,
            Err(e) if e.to_string().contains("stale element") => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("cannot click {selector}: {e}"),
        }
    }
    panic!("{selector} was redrawn under every click");
}
