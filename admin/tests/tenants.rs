//! The status of a store per tenant, through the operations and over the
//! page's `/api/tenants` on real HTTP, against PostgreSQL.

use std::net::SocketAddr;

use tidings_admin::page::AdminPage;
use tidings_admin::{Admin, AdminError, Tenants};
use tidings_core::OutboxSpec;
use tidings_postgres::{PgOutboxOptions, PgOutboxStore};
use tidings_testing::names::unique_name;
use tidings_testing::services::postgres_pool;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

static ORDERS: OutboxSpec<u32> = OutboxSpec::json("order-events").destination("orders");

/// A migrated store in a fresh schema (a tenant's database, here) with
/// `pending` rows staged.
async fn store_with(pending: u32) -> PgOutboxStore {
    let pool = postgres_pool(2).await;
    let options = PgOutboxOptions::new().schema(unique_name("admin_tenant"));
    let store = PgOutboxStore::new(pool, options).unwrap();
    store.migrate().await.unwrap();
    let mut ctx = store.begin().await.unwrap();
    for n in 0..pending {
        ctx.outbox().stage(&ORDERS, "order.placed", &n).unwrap();
    }
    ctx.commit().await.unwrap();
    store
}

async fn tenants() -> Tenants<PgOutboxStore> {
    Tenants::new()
        .tenant("globex", Admin::new(store_with(2).await))
        .tenant("acme", Admin::new(store_with(3).await))
}

/// The whole answer to `GET path`.
async fn get(address: SocketAddr, path: &str) -> String {
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    answer
}

/// The JSON body of an answer.
fn body(answer: &str) -> serde_json::Value {
    let (_, body) = answer.split_once("\r\n\r\n").expect("a body");
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {answer}"))
}

async fn serve(page: AdminPage<PgOutboxStore>) -> SocketAddr {
    let listener = page.bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(page.serve_on(listener, std::future::pending()));
    address
}

#[tokio::test]
async fn each_tenant_reports_its_own_store_in_tenant_order() {
    let status = tenants().await.status().await.unwrap();
    let pending: Vec<(&str, u64)> = (status.iter())
        .map(|t| (t.tenant.as_str(), t.status.routes[0].pending))
        .collect();
    assert_eq!(pending, [("acme", 3), ("globex", 2)]);
}

#[tokio::test]
async fn an_unknown_tenant_is_an_error_naming_the_known_ones() {
    let tenants = tenants().await;
    let error = tenants.get("initech").unwrap_err();
    assert!(matches!(error, AdminError::UnknownTenant { .. }), "{error}");
    assert_eq!(
        error.to_string(),
        "unknown tenant \"initech\"; the tenants are: acme, globex"
    );
}

#[tokio::test]
async fn the_page_serves_every_tenant_and_one_by_id() {
    let store = store_with(0).await;
    let page = AdminPage::new(Admin::new(store)).tenants(tenants().await);
    let address = serve(page).await;

    let all = get(address, "/api/tenants").await;
    assert!(all.starts_with("HTTP/1.1 200"), "{all}");
    let all = body(&all);
    assert_eq!(all[0]["tenant"], "acme");
    assert_eq!(all[0]["status"]["routes"][0]["pending"], 3);
    assert_eq!(all[1]["tenant"], "globex");
    assert_eq!(all[1]["status"]["routes"][0]["pending"], 2);

    let one = get(address, "/api/tenants?tenant=globex").await;
    assert!(one.starts_with("HTTP/1.1 200"), "{one}");
    assert_eq!(body(&one)["routes"][0]["pending"], 2);

    let unknown = get(address, "/api/tenants?tenant=initech").await;
    assert!(unknown.starts_with("HTTP/1.1 404"), "{unknown}");
    assert!(
        body(&unknown)["error"]
            .as_str()
            .unwrap()
            .contains("acme, globex")
    );
}

#[tokio::test]
async fn a_page_without_tenants_answers_not_found() {
    let page = AdminPage::new(Admin::new(store_with(0).await));
    let answer = get(serve(page).await, "/api/tenants").await;
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
}
