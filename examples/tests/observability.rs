//! The `observability` example over real HTTP, PostgreSQL and RabbitMQ:
//! after a short run its `/metrics` endpoint serves the backlog gauge, the
//! publish counter and the handler histogram with plausible values.

use std::collections::HashMap;
use std::process::Stdio;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tidings::postgres::sqlx::{self, AssertSqlSafe};
use tidings::rabbitmq::{ConnectionOptions, Topology};
use tidings_testing::names::unique_name;
use tidings_testing::services::{amqp_url, database_url, expect_listening};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

/// How long the example gets to publish and bill enough orders.
const RUN_TIMEOUT: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_endpoint_serves_backlog_publishes_and_handler_latency() {
    expect_listening("PostgreSQL", &database_url());
    expect_listening("RabbitMQ", &amqp_url());
    let name = unique_name("observability");
    let mut child = Command::new(env!("CARGO_BIN_EXE_observability"))
        .env("DATABASE_URL", database_url())
        .env("AMQP_URL", amqp_url())
        .env("METRICS_ADDR", "127.0.0.1:0")
        .env("ORDERS_SCHEMA", &name)
        .env("ORDERS_QUEUE", &name)
        .env("ORDER_INTERVAL_MS", "20")
        .env("OTEL_TRACES_EXPORTER", "none")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start observability");
    let stdout = child.stdout.take().expect("the example's stdout");
    let first = tokio::time::timeout(RUN_TIMEOUT, BufReader::new(stdout).lines().next_line())
        .await
        .expect("observability did not serve metrics within 60 s")
        .expect("read the example's stdout")
        .expect("observability exited before serving metrics");
    let url = first
        .strip_prefix("metrics on ")
        .unwrap_or_else(|| panic!("unexpected first line: {first}"))
        .to_owned();

    let deadline = Instant::now() + RUN_TIMEOUT;
    let samples = loop {
        let samples = scrape(&url).await;
        let handled = value(
            &samples,
            "tidings_consumer_handler_seconds_count",
            "outcome=\"ok\"",
        );
        if handled.is_some_and(|n| n >= 20.0) {
            break samples;
        }
        assert!(
            Instant::now() < deadline,
            "too few orders billed: {samples:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let published = value(&samples, "tidings_relay_published_total", "").expect("publish counter");
    let handled = value(
        &samples,
        "tidings_consumer_handler_seconds_count",
        "outcome=\"ok\"",
    );
    let latency = value(
        &samples,
        "tidings_consumer_handler_seconds_sum",
        "outcome=\"ok\"",
    );
    let pending = value(&samples, "tidings_outbox_pending", "").expect("backlog gauge");
    let acked = value(
        &samples,
        "tidings_consumer_messages_total",
        "outcome=\"acked\"",
    );
    let (handled, latency) = (handled.unwrap(), latency.expect("handler histogram sum"));
    assert!(
        published >= handled,
        "{published} published, {handled} handled"
    );
    assert!(
        latency / handled < 1.0,
        "mean handler time {} s",
        latency / handled
    );
    assert!((0.0..1_000.0).contains(&pending), "backlog {pending}");
    assert!(acked.is_some_and(|n| n >= 1.0), "acked {acked:?}");

    let pid = child.id().expect("running").to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status();
    assert!(killed.expect("run kill").success());
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait()).await;
    assert!(status.expect("exit after SIGTERM").expect("wait").success());
    drop_what_the_test_owns(&name).await;
}

/// `GET url` over HTTP/1.1, as `{series with labels: value}`.
async fn scrape(url: &str) -> HashMap<String, f64> {
    let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let response = client
        .get(url.parse().expect("a URL"))
        .await
        .expect("GET /metrics");
    assert!(response.status().is_success(), "{}", response.status());
    let body = response
        .into_body()
        .collect()
        .await
        .expect("read /metrics")
        .to_bytes();
    String::from_utf8(body.to_vec())
        .expect("UTF-8 text")
        .lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.rsplit_once(' '))
        .filter_map(|(series, value)| Some((series.to_owned(), value.parse().ok()?)))
        .collect()
}

/// The value of the series `metric` whose labels contain `label`.
fn value(samples: &HashMap<String, f64>, metric: &str, label: &str) -> Option<f64> {
    samples
        .iter()
        .find(|(series, _)| series.starts_with(&format!("{metric}{{")) && series.contains(label))
        .map(|(_, value)| *value)
}

async fn drop_what_the_test_owns(name: &str) {
    let db = sqlx::PgPool::connect(&database_url())
        .await
        .expect("connect");
    let drop = format!("drop schema \"{name}\" cascade");
    sqlx::raw_sql(AssertSqlSafe(drop))
        .execute(&db)
        .await
        .expect("drop the schema");
    Topology::new(ConnectionOptions::new(amqp_url()))
        .delete_queue(name)
        .await
        .expect("delete the queue");
}

/// Every metric the Grafana dashboard queries is one of the documented
/// ones (histograms through their `_bucket` series).
#[test]
fn the_dashboard_queries_documented_metrics() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let read = |path: &str| std::fs::read_to_string(root.join(path)).expect(path);
    let table = read("docs/src/operations/metrics.md");
    let dashboard: serde_json::Value =
        serde_json::from_str(&read("docs/grafana/tidings.json")).expect("dashboard JSON");
    let panels = dashboard["panels"].as_array().expect("panels");
    assert!(
        panels.len() >= 6,
        "backlog, age, publish rate, parks, latency"
    );
    for target in panels
        .iter()
        .flat_map(|p| p["targets"].as_array().expect("targets"))
    {
        let expr = target["expr"].as_str().expect("an expression");
        let names = expr
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|word| word.starts_with("tidings_"));
        for name in names {
            let documented = name.strip_suffix("_bucket").unwrap_or(name);
            assert!(
                table.contains(&format!("`{documented}`")),
                "{name} in the dashboard is not in metrics.md"
            );
        }
    }
}
