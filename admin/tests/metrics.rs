//! The admin page serves the Prometheus text it is given at `/metrics`
//! over real HTTP, and answers 404 without a renderer.

use std::net::SocketAddr;

use metrics_exporter_prometheus::PrometheusBuilder;
use tidings_admin::Admin;
use tidings_admin::page::AdminPage;
use tidings_postgres::{PgOutboxOptions, PgOutboxStore};
use tidings_testing::names::unique_name;
use tidings_testing::services::postgres_pool;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn store() -> PgOutboxStore {
    let pool = postgres_pool(2).await;
    let options = PgOutboxOptions::new().schema(unique_name("admin_metrics"));
    PgOutboxStore::new(pool, options).unwrap()
}

async fn serve(page: AdminPage<PgOutboxStore>) -> SocketAddr {
    let listener = page.bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(page.serve_on(listener, std::future::pending()));
    address
}

/// The whole answer to `GET /metrics`.
async fn scrape(address: SocketAddr) -> String {
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let request = "GET /metrics HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n";
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    answer
}

#[tokio::test]
async fn metrics_are_served_from_the_recorder_given() {
    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    metrics::with_local_recorder(&recorder, || {
        metrics::counter!("tidings_relay_published_total", "route" => "order-events").increment(3);
        metrics::gauge!("tidings_outbox_pending", "route" => "order-events").set(7.0);
    });
    let page = AdminPage::new(Admin::new(store().await)).metrics(move || handle.render());
    let answer = scrape(serve(page).await).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("text/plain; version=0.0.4"), "{answer}");
    assert!(
        answer.contains("tidings_relay_published_total{route=\"order-events\"} 3"),
        "{answer}"
    );
    assert!(
        answer.contains("tidings_outbox_pending{route=\"order-events\"} 7"),
        "{answer}"
    );
}

#[tokio::test]
async fn without_a_renderer_metrics_are_not_found() {
    let page = AdminPage::new(Admin::new(store().await));
    let answer = scrape(serve(page).await).await;
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
}
