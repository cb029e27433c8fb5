use tidings_admin::tidings_postgres::sqlx;
use tidings_admin::tidings_postgres::{LogTailing, PgOutboxOptions, PgOutboxStore};
use tidings_testing::names::unique_name;
use tidings_testing::services::{self, logical_database_url};

use crate::support::{json, tidings_on};

/// A log-tailed store in message mode on the logical cluster, with a slot
/// of its own.
async fn tailed_store() -> PgOutboxStore {
    let url = logical_database_url();
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(2)
        .connect(&url)
        .await
        .unwrap_or_else(|e| {
            services::service_missing("PostgreSQL with wal_level=logical", &url, &e)
        });
    services::drop_orphan_slots(&pool).await;
    let schema = unique_name("tidings_cli");
    let tailing = LogTailing::messages()
        .slot(format!("{schema}_slot"))
        .publication(format!("{schema}_pub"));
    let options = PgOutboxOptions::new().schema(&schema).log_tailing(tailing);
    let store = PgOutboxStore::new(pool, options).expect("valid names");
    store.migrate().await.expect("migrate");
    store
}

async fn drop_tailed(store: &PgOutboxStore) {
    services::drop_tailed_schema(store.pool(), store.options().get_schema()).await;
}

/// `tidings` on the store's schema on the logical cluster.
fn on_tailed(store: &PgOutboxStore) -> assert_cmd::Command {
    let mut command = tidings_on(&logical_database_url());
    command.args(["--schema", store.options().get_schema()]);
    command
}

#[tokio::test]
async fn slot_status_shows_where_the_slot_stands() {
    let store = tailed_store().await;
    let status = json(on_tailed(&store).args(["--json", "slot", "status"]));
    assert_eq!(status["active"], false, "{status}");
    assert!(
        status["confirmed"].as_str().unwrap().contains('/'),
        "{status}"
    );
    assert!(status["retained_bytes"].as_u64().is_some(), "{status}");
    drop_tailed(&store).await;
}

#[tokio::test]
async fn slot_accept_asks_first_and_then_accepts() {
    let store = tailed_store().await;
    on_tailed(&store)
        .args(["slot", "accept"])
        .assert()
        .failure()
        .stderr(predicates::str::contains("--yes"));
    let accepted = json(on_tailed(&store).args(["--json", "slot", "accept", "--yes"]));
    assert!(
        accepted["accepted"].as_str().unwrap().contains('/'),
        "{accepted}"
    );
    drop_tailed(&store).await;
}

#[tokio::test]
async fn a_failed_event_of_a_message_outbox_is_requeued_as_a_message() {
    let store = tailed_store().await;
    let schema = store.options().get_schema().to_owned();
    let insert = format!(
        "insert into \"{schema}\".tidings_outbox \
         (event_id, route, destination, event_type, payload, content_type, occurred_at, status, last_error, finished_at) \
         values (gen_random_uuid(), 'order-events', 'orders', 'order.placed', '42', \
         'application/json', now(), 'failed', 'poison', now())"
    );
    sqlx::raw_sql(sqlx::AssertSqlSafe(insert))
        .execute(store.pool())
        .await
        .unwrap();
    let done = json(on_tailed(&store).args([
        "--json",
        "failed",
        "requeue",
        "--route",
        "order-events",
        "--all",
    ]));
    assert_eq!(done["requeued"], 1, "{done}");
    // The event is staged again as a message for the relay, not as a row.
    let rows: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "select count(*) from \"{schema}\".tidings_outbox"
    )))
    .fetch_one(store.pool())
    .await
    .unwrap();
    assert_eq!(rows, 0);
    // Every test's messages are decoded on the slot: only this outbox's count.
    let prefix = format!("tidings:{schema}.tidings_outbox");
    let messages: i64 = sqlx::query_scalar(
        "select count(*) from pg_logical_slot_peek_binary_changes($1, null, null, \
         'proto_version', '1', 'publication_names', $2, 'messages', 'true') \
         where substring(data from 1 for 1) = 'M' \
         and position(convert_to($3, 'UTF8') in data) > 0",
    )
    .bind(format!("{schema}_slot"))
    .bind(format!("{schema}_pub"))
    .bind(&prefix)
    .fetch_one(store.pool())
    .await
    .unwrap();
    assert_eq!(messages, 1);
    drop_tailed(&store).await;
}
