//! Several stores in one schema, names that clash with other tables, and
//! the schemas PostgreSQL keeps for itself.

use crate::support;

use sqlx::PgPool;
use sqlx::postgres::PgPoolOptions;
use support::billing::mark_billing;
use support::{ORDER_EVENTS, SCHEMA_PREFIX, drop_schema, pool, row_count, run_sql, stage_to};
use tidings_core::{InboxMark, InboxStore, StoreError};
use tidings_postgres::{PgOutboxOptions, PgOutboxStore};
use tidings_testing::names::unique_name;
use tidings_testing::services::database_url;
use uuid::Uuid;

/// A store named by `options` in `schema`, not yet migrated.
fn store_in(pool: &PgPool, schema: &str, options: PgOutboxOptions) -> PgOutboxStore {
    PgOutboxStore::new(pool.clone(), options.schema(schema)).expect("valid names")
}

/// Prepares a fresh schema with `prepare` (given the schema's name), then
/// checks that a store migrating into it refuses to take over `relation`.
async fn refuses_clash(prepare: impl FnOnce(&str) -> String, relation: &str) {
    let pool = pool(4).await;
    let schema = unique_name(SCHEMA_PREFIX);
    run_sql(&pool, prepare(&schema)).await;
    let store = store_in(&pool, &schema, PgOutboxOptions::new());
    let result = store.migrate().await;
    assert_clash(&store, result, relation).await;
    drop_schema(&store).await;
}

/// Asserts that `migrate` failed with a schema error naming `relation`,
/// and that it left nothing of the store behind.
async fn assert_clash(store: &PgOutboxStore, result: Result<usize, StoreError>, relation: &str) {
    let err = result.expect_err("migrate must refuse the clash");
    assert!(matches!(err, StoreError::Schema(_)), "{err:?}");
    assert!(!err.is_transient(), "{err}");
    let message = err.to_string();
    assert!(message.contains(relation), "{message}");
    assert!(message.contains("already exists"), "{message}");
    let err = store.verify().await.unwrap_err();
    assert!(
        err.to_string().contains("migrations table"),
        "migrate rolled back: {err}"
    );
}

#[tokio::test]
async fn two_outbox_tables_share_the_default_inbox() {
    let pool = pool(8).await;
    let schema = unique_name(SCHEMA_PREFIX);
    let first = store_in(&pool, &schema, PgOutboxOptions::new());
    let second = store_in(
        &pool,
        &schema,
        PgOutboxOptions::new().table("second_outbox"),
    );
    assert!(first.migrate().await.unwrap() > 0);
    assert!(second.migrate().await.expect("second migrate") > 0);
    assert_eq!(first.migrate().await.unwrap(), 0);
    assert_eq!(second.migrate().await.unwrap(), 0);
    first.verify().await.unwrap();
    second.verify().await.unwrap();

    stage_to(&first, &ORDER_EVENTS, 2).await;
    stage_to(&second, &ORDER_EVENTS, 3).await;
    assert_eq!((row_count(&first).await, row_count(&second).await), (2, 3));

    // One inbox: a mark through either store is seen by the other.
    let event = Uuid::now_v7();
    let mut tx = first.inbox().begin().await.unwrap();
    let mark = mark_billing(&first, &mut tx, event).await;
    assert_eq!(mark, InboxMark::Fresh(()));
    first.inbox().commit(tx).await.unwrap();
    let mut tx = second.inbox().begin().await.unwrap();
    let mark = mark_billing(&second, &mut tx, event).await;
    assert_eq!(mark, InboxMark::Duplicate);
    second.inbox().rollback(tx).await.unwrap();
    drop_schema(&first).await;
}

#[tokio::test]
async fn an_unrelated_table_named_like_the_inbox_is_refused() {
    refuses_clash(
        |s| format!("create schema \"{s}\"; create table \"{s}\".tidings_inbox (id int)"),
        "tidings_inbox",
    )
    .await;
}

#[tokio::test]
async fn an_unrelated_index_named_like_the_inbox_age_index_is_refused() {
    refuses_clash(
        |s| {
            format!(
                "create schema \"{s}\"; \
                 create table \"{s}\".other (n int); \
                 create index tidings_inbox_age_idx on \"{s}\".other (n)"
            )
        },
        "tidings_inbox_age_idx",
    )
    .await;
}

#[tokio::test]
async fn an_unrelated_table_named_like_the_outbox_is_refused() {
    refuses_clash(
        |s| format!("create schema \"{s}\"; create table \"{s}\".tidings_outbox (id int)"),
        "tidings_outbox",
    )
    .await;
}

#[tokio::test]
async fn an_outbox_named_like_another_stores_inbox_is_refused() {
    let pool = pool(4).await;
    let schema = unique_name(SCHEMA_PREFIX);
    let first = store_in(&pool, &schema, PgOutboxOptions::new().inbox_table("shared"));
    first.migrate().await.unwrap();
    let second = store_in(
        &pool,
        &schema,
        PgOutboxOptions::new().table("shared").inbox_table("other"),
    );
    let result = second.migrate().await;
    assert_clash(&second, result, "shared").await;
    first.verify().await.unwrap();
    drop_schema(&first).await;
}

#[tokio::test]
async fn system_schemas_are_refused_when_the_store_is_built() {
    let pool = PgPoolOptions::new().connect_lazy(&database_url()).unwrap();
    for schema in [
        "pg_catalog",
        "information_schema",
        "pg_toast",
        "pg_temp",
        "pg_temp_3",
        "pg_toast_temp_1",
        "pg_anything",
    ] {
        let options = PgOutboxOptions::new().schema(schema);
        let Err(err) = PgOutboxStore::new(pool.clone(), options) else {
            panic!("schema {schema:?} was accepted");
        };
        assert!(matches!(err, StoreError::Invalid(_)), "{schema}: {err:?}");
        let message = err.to_string();
        assert!(
            message.contains(&format!("schema name {schema:?} is invalid")),
            "{message}"
        );
        assert!(message.contains("reserves"), "{message}");
    }
    for fine in ["public", "pg", "pgx_shop", "shop_pg_catalog"] {
        let options = PgOutboxOptions::new().schema(fine);
        assert!(PgOutboxStore::new(pool.clone(), options).is_ok(), "{fine}");
    }
}
