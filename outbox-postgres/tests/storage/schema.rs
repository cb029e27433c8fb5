//! Table names, migrations and the startup check.

use crate::support;

use sqlx::postgres::PgPoolOptions;
use support::{SCHEMA_PREFIX, drop_schema, pool, run_sql, store};
use tidings_core::StoreError;
use tidings_postgres::{MAX_IDENTIFIER_LEN, PgOutboxOptions, PgOutboxStore, Retention};
use tidings_testing::names::unique_name;
use tidings_testing::services::database_url;

#[tokio::test]
async fn hostile_schema_and_table_names_are_rejected() {
    let pool = PgPoolOptions::new().connect_lazy(&database_url()).unwrap();
    let long = "a".repeat(MAX_IDENTIFIER_LEN + 1);
    let hostile = [
        "orders\"; drop table users; --",
        "orders; drop table users",
        "o'brien",
        "public.outbox",
        "Outbox",
        "",
        long.as_str(),
    ];
    for name in hostile {
        let cases = [
            ("schema", PgOutboxOptions::new().schema(name)),
            ("outbox table", PgOutboxOptions::new().table(name)),
            ("inbox table", PgOutboxOptions::new().inbox_table(name)),
        ];
        for (kind, options) in cases {
            let err = PgOutboxStore::new(pool.clone(), options).unwrap_err();
            assert!(matches!(err, StoreError::Invalid(_)), "{name:?}: {err}");
            let message = err.to_string();
            assert!(
                message.contains(&format!("{kind} name {name:?} is invalid")),
                "{message}"
            );
        }
    }
    assert!(
        PgOutboxStore::new(pool.clone(), PgOutboxOptions::new().table(&long[1..])).is_ok(),
        "the longest legal name is accepted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_from_four_tasks_at_once_applies_once_then_does_nothing() {
    let pool = pool(8).await;
    let options = PgOutboxOptions::new().schema(unique_name(SCHEMA_PREFIX));
    let store = PgOutboxStore::new(pool, options).unwrap();
    assert!(matches!(store.verify().await, Err(StoreError::Schema(_))));

    let runs = (0..4).map(|_| {
        let store = store.clone();
        tokio::spawn(async move { store.migrate().await })
    });
    let mut applied = Vec::new();
    for run in runs.collect::<Vec<_>>() {
        applied.push(run.await.unwrap().expect("migrate"));
    }
    applied.sort();
    assert_eq!(applied[..3], [0, 0, 0], "{applied:?}");
    assert!(applied[3] > 0, "{applied:?}");

    assert_eq!(store.migrate().await.unwrap(), 0);
    store.verify().await.unwrap();
    drop_schema(&store).await;
}

#[tokio::test]
async fn two_outboxes_share_a_schema() {
    let first = store(Retention::Delete).await;
    let options = PgOutboxOptions::new()
        .schema(first.options().get_schema())
        .table("second_outbox")
        .inbox_table("second_inbox");
    let second = PgOutboxStore::new(first.pool().clone(), options).unwrap();
    assert!(second.migrate().await.unwrap() > 0);
    second.verify().await.unwrap();
    assert_ne!(first.channel(), second.channel());
    drop_schema(&first).await;
}

#[tokio::test]
async fn the_startup_check_names_what_is_missing() {
    let store = store(Retention::Delete).await;
    store.verify().await.unwrap();

    let schema = store.options().get_schema();
    let drop_index = format!("drop index \"{schema}\".tidings_outbox_claim_idx");
    run_sql(store.pool(), drop_index).await;
    let err = store.verify().await.unwrap_err();
    assert!(matches!(err, StoreError::Schema(_)));
    assert!(err.to_string().contains("outbox claim index"), "{err}");
    assert!(err.to_string().contains("needs migrating"), "{err}");

    let forget = format!(
        "delete from \"{schema}\".tidings_outbox_migrations where version > 1; \
         create index tidings_outbox_claim_idx on \"{schema}\".tidings_outbox (route, id) \
         where status = 'pending'"
    );
    run_sql(store.pool(), forget).await;
    let err = store.verify().await.unwrap_err();
    assert!(err.to_string().contains("is at version 1"), "{err}");

    let drop_table = format!("drop table \"{schema}\".tidings_outbox");
    run_sql(store.pool(), drop_table).await;
    let err = store.verify().await.unwrap_err();
    assert!(err.to_string().contains("outbox table"), "{err}");
    drop_schema(&store).await;
}
