//! The `axum_service` example over real HTTP, PostgreSQL and RabbitMQ: 200
//! concurrent orders, one in five rejected by validation, end with exactly
//! one invoice per committed order and none for the rejected; SIGTERM
//! stops taking connections, answers the request in flight and exits 0.
#![allow(clippy::print_stderr)]

mod support;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use futures::future::join_all;
use hyper::StatusCode;
use support::Names;
use support::client::{Answer, OrdersClient};
use support::service::Service;
use tidings::postgres::sqlx::{self, AssertSqlSafe, PgPool};
use tidings::rabbitmq::{ConnectionOptions, Topology};
use tidings_testing::services::{amqp_url, database_url, expect_listening, postgres_pool};

const REQUESTS: i64 = 200;
/// How long every committed order gets to be invoiced.
const INVOICE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the service gets to exit once the request in flight is answered.
const EXIT_TIMEOUT: Duration = Duration::from_secs(20);

/// Places order `n`: seven customers, so events share ordering keys.
async fn place(client: &OrdersClient, n: i64) -> (i64, Answer) {
    let customer = format!("customer-{}", n % 7);
    (n, client.place(&customer, amount_cents(n)).await)
}

/// Every fifth order has an amount the service rejects after writing it.
fn amount_cents(n: i64) -> i64 {
    if n % 5 == 0 { -n } else { 1_000 + n }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_orders_are_invoiced_once_and_sigterm_drains_requests() {
    expect_listening("PostgreSQL", &database_url());
    expect_listening("RabbitMQ", &amqp_url());
    let names = Names::unique();
    let mut service = Service::start(&names).await;
    let db = postgres_pool(3).await;
    let client = OrdersClient::new(service.address);

    let started = Instant::now();
    let answers = join_all((0..REQUESTS).map(|n| place(&client, n))).await;
    let answered_in = started.elapsed();
    let mut committed = BTreeSet::new();
    let mut rejected = 0;
    for (n, answer) in &answers {
        if amount_cents(*n) > 0 {
            assert!(committed.insert(answer.order_id()), "order id given twice");
        } else {
            assert_eq!(
                answer.status,
                StatusCode::UNPROCESSABLE_ENTITY,
                "{answer:?}"
            );
            rejected += 1;
        }
    }
    assert_eq!(committed.len() as i64, REQUESTS - REQUESTS / 5);

    let invoiced = wait_for_invoices(&db, &names, committed.len()).await;
    let invoiced_in = started.elapsed();
    let invoices = invoiced.len();
    assert_eq!(
        invoices,
        committed.len(),
        "invoices for {committed:?}: {invoiced:?}"
    );
    let invoiced: BTreeSet<i64> = invoiced.into_iter().collect();
    assert_eq!(
        invoiced, committed,
        "an order invoiced twice, or not at all"
    );
    let [orders, unpaid, outbox] = counts(&db, &names).await;
    assert_eq!(orders, committed.len() as i64, "rejected orders were kept");
    assert_eq!(unpaid, 0, "a rejected order's event reached billing");
    assert_eq!(outbox, 0, "events left in the outbox");
    eprintln!(
        "{REQUESTS} requests: {} committed, {rejected} rejected, {invoices} invoices; \
         answered in {answered_in:?}, all invoiced in {invoiced_in:?}",
        committed.len()
    );

    let drained = Instant::now();
    sigterm_drains_the_request_in_flight(&mut service, &db, &names).await;
    eprintln!("shutdown with a request in flight: {:?}", drained.elapsed());

    // With the consumer stopped, a late redelivery would have shown by now.
    let (invoices, invoiced_orders): (i64, i64) = sqlx::query_as(sql(format!(
        "select count(*), count(distinct order_id) from {}.invoices",
        names.schema
    )))
    .fetch_one(&db)
    .await
    .expect("count invoices");
    assert_eq!(invoices, invoiced_orders, "an order was invoiced twice");

    drop_what_the_test_owns(&db, &names).await;
}

/// Holds the order table's lock so one request waits inside its handler,
/// sends SIGTERM, checks that new connections are refused while the
/// service waits for that request, then lets it finish: it commits, and
/// the service exits 0.
async fn sigterm_drains_the_request_in_flight(service: &mut Service, db: &PgPool, names: &Names) {
    let orders = format!("{}.orders", names.schema);
    let mut blocker = db.begin().await.expect("begin");
    sqlx::query(sql(format!(
        "lock table {orders} in share row exclusive mode"
    )))
    .execute(&mut *blocker)
    .await
    .expect("lock orders");
    let client = OrdersClient::new(service.address);
    let in_flight = tokio::spawn(async move { client.place("late", 4_200).await });
    wait_until("the request waits for the lock", || async {
        let waiting: i64 = sqlx::query_scalar(
            "select count(*) from pg_locks where relation = $1::text::regclass and not granted",
        )
        .bind(&orders)
        .fetch_one(db)
        .await
        .expect("read pg_locks");
        waiting > 0
    })
    .await;

    service.terminate();
    wait_until("new connections are refused", || {
        service.refuses_connections()
    })
    .await;
    assert!(service.is_running(), "exited with a request in flight");
    assert!(
        !in_flight.is_finished(),
        "the request in flight was cut off"
    );

    blocker.rollback().await.expect("release the lock");
    let answer = tokio::time::timeout(EXIT_TIMEOUT, in_flight)
        .await
        .expect("the request in flight was never answered")
        .expect("the request in flight");
    let late = answer.order_id();
    let status = service.exit_within(EXIT_TIMEOUT).await;
    assert!(status.success(), "axum_service exited with {status}");
    let kept: i64 = sqlx::query_scalar(sql(format!("select count(*) from {orders} where id = $1")))
        .bind(late)
        .fetch_one(db)
        .await
        .expect("read orders");
    assert_eq!(kept, 1, "the order answered during shutdown was not kept");
}

/// The order ids of the invoices, once there are `expected` of them and
/// the relay has settled every event (or the deadline passed).
async fn wait_for_invoices(db: &PgPool, names: &Names, expected: usize) -> Vec<i64> {
    let invoices = format!("select order_id from {}.invoices", names.schema);
    let outbox = format!("select count(*) from {}.tidings_outbox", names.schema);
    let deadline = Instant::now() + INVOICE_TIMEOUT;
    loop {
        let ids: Vec<i64> = sqlx::query_scalar(sql(invoices.clone()))
            .fetch_all(db)
            .await
            .expect("read invoices");
        let unsettled: i64 = sqlx::query_scalar(sql(outbox.clone()))
            .fetch_one(db)
            .await
            .expect("read the outbox");
        let done = ids.len() >= expected && unsettled == 0;
        if done || Instant::now() > deadline {
            return ids;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Orders, invoices for an amount the service rejects, and events still in
/// the outbox.
async fn counts(db: &PgPool, names: &Names) -> [i64; 3] {
    let schema = &names.schema;
    let row: (i64, i64, i64) = sqlx::query_as(sql(format!(
        "select (select count(*) from {schema}.orders), \
                (select count(*) from {schema}.invoices where amount_cents <= 0), \
                (select count(*) from {schema}.tidings_outbox)"
    )))
    .fetch_one(db)
    .await
    .expect("count");
    [row.0, row.1, row.2]
}

/// SQL naming the test's own schema, whose name it made from a UUID.
fn sql(text: String) -> AssertSqlSafe<String> {
    AssertSqlSafe(text)
}

/// Polls `done` every 20 ms for up to 10 s.
async fn wait_until<F, Fut>(what: &str, mut done: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done().await {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn drop_what_the_test_owns(db: &PgPool, names: &Names) {
    sqlx::raw_sql(sql(format!("drop schema {} cascade", names.schema)))
        .execute(db)
        .await
        .expect("drop the schema");
    let topology = Topology::new(ConnectionOptions::new(amqp_url()));
    topology
        .delete_queue(&names.queue)
        .await
        .expect("delete the queue");
}
