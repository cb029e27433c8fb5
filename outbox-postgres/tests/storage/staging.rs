//! Staging through a `PgContext`: the events commit with the caller's
//! statements, in one insert, or not at all.

use crate::support;

use sqlx::{AssertSqlSafe, Connection};
use support::{ORDER_EVENTS, drop_schema, row_count, run_sql, stage_with_id, store};
use tidings_postgres::{CommitError, PgOutboxStore, Retention};
use uuid::Uuid;

async fn create_orders(store: &PgOutboxStore) -> String {
    let table = format!("\"{}\".orders", store.options().get_schema());
    let sql = format!("create table {table} (id bigint primary key)");
    run_sql(store.pool(), sql).await;
    table
}

async fn orders(store: &PgOutboxStore, table: &str) -> i64 {
    let sql = format!("select count(*) from {table}");
    sqlx::query_scalar(AssertSqlSafe(sql))
        .fetch_one(store.pool())
        .await
        .unwrap()
}

#[tokio::test]
async fn rolled_back_or_dropped_context_leaves_nothing() {
    let store = store(Retention::Delete).await;
    let orders_table = create_orders(&store).await;
    let insert = format!("insert into {orders_table} (id) values ($1)");

    for (id, rollback) in [(1_u64, true), (2, false)] {
        let mut ctx = store.begin().await.unwrap();
        sqlx::query(AssertSqlSafe(insert.clone()))
            .bind(id as i64)
            .execute(ctx.tx())
            .await
            .unwrap();
        ctx.outbox()
            .stage(&ORDER_EVENTS, "order.placed", &id)
            .unwrap();
        ctx.flush().await.unwrap();
        if rollback {
            ctx.rollback().await.unwrap();
        } else {
            drop(ctx);
        }
    }

    assert_eq!(row_count(&store).await, 0);
    assert_eq!(orders(&store, &orders_table).await, 0);
    drop_schema(&store).await;
}

#[tokio::test]
async fn committed_context_writes_the_staged_events_in_one_statement() {
    let store = store(Retention::Delete).await;
    let orders_table = create_orders(&store).await;

    let mut ctx = store.begin().await.unwrap();
    sqlx::query(AssertSqlSafe(format!(
        "insert into {orders_table} (id) values (7)"
    )))
    .execute(ctx.tx())
    .await
    .unwrap();
    for n in 0..25_u64 {
        ctx.outbox()
            .stage(&ORDER_EVENTS, "order.placed", &n)
            .unwrap()
            .ordering_key(format!("order-{n}"))
            .header("traceparent", "00-1-2-01");
    }
    ctx.commit().await.unwrap();

    assert_eq!(orders(&store, &orders_table).await, 1);
    // Rows written by one statement share its transaction (xmin) and its
    // command id within the transaction (cmin).
    let sql = format!(
        "select count(*), count(distinct xmin::text), count(distinct cmin::text), \
                array_agg(convert_from(payload, 'UTF8') order by id)::text \
         from \"{}\".\"{}\"",
        store.options().get_schema(),
        store.options().get_table()
    );
    let (rows, transactions, statements, payloads): (i64, i64, i64, String) =
        sqlx::query_as(AssertSqlSafe(sql))
            .fetch_one(store.pool())
            .await
            .unwrap();
    assert_eq!((rows, transactions, statements), (25, 1, 1));
    let expected: Vec<String> = (0..25).map(|n| n.to_string()).collect();
    assert_eq!(payloads, format!("{{{}}}", expected.join(",")));
    drop_schema(&store).await;
}

#[tokio::test]
async fn contexts_wrap_the_callers_transaction_or_connection() {
    let store = store(Retention::Delete).await;

    // A transaction the caller opened.
    let tx = store.pool().begin().await.unwrap();
    let mut ctx = store.context(tx);
    ctx.outbox()
        .stage(&ORDER_EVENTS, "order.placed", &1)
        .unwrap();
    ctx.commit().await.unwrap();
    assert_eq!(row_count(&store).await, 1);

    // A connection already in a transaction: the context is a savepoint,
    // and the caller's rollback takes the events with it.
    let mut conn = store.pool().acquire().await.unwrap();
    let mut outer = conn.begin().await.unwrap();
    let mut ctx = store.begin_on(&mut outer).await.unwrap();
    ctx.outbox()
        .stage(&ORDER_EVENTS, "order.placed", &2)
        .unwrap();
    ctx.commit().await.unwrap();
    outer.rollback().await.unwrap();
    assert_eq!(row_count(&store).await, 1);

    // The transaction handed back commits the events with it.
    let mut ctx = store.begin().await.unwrap();
    ctx.outbox()
        .stage(&ORDER_EVENTS, "order.placed", &3)
        .unwrap();
    let tx = ctx.into_transaction().await.unwrap();
    assert_eq!(row_count(&store).await, 1);
    tx.commit().await.unwrap();
    assert_eq!(row_count(&store).await, 2);
    drop_schema(&store).await;
}

#[tokio::test]
async fn staging_an_event_id_twice_is_idempotent() {
    let store = store(Retention::Delete).await;
    let id = Uuid::now_v7();
    for _ in 0..2 {
        stage_with_id(&store, id).await;
    }
    assert_eq!(row_count(&store).await, 1);
    drop_schema(&store).await;
}

#[tokio::test]
async fn invalid_staging_options_fail_the_commit_and_write_nothing() {
    let store = store(Retention::Delete).await;
    let mut ctx = store.begin().await.unwrap();
    ctx.outbox()
        .stage(&ORDER_EVENTS, "order.placed", &1)
        .unwrap();
    ctx.outbox()
        .stage(&ORDER_EVENTS, "order.placed", &2)
        .unwrap()
        .header("ce-id", "forged");
    let err = ctx.commit().await.unwrap_err();
    assert!(matches!(err, CommitError::Stage(_)), "{err}");
    assert!(!err.is_transient());
    assert_eq!(row_count(&store).await, 0);
    drop_schema(&store).await;
}

#[tokio::test]
async fn a_route_is_recorded_once_staged_and_kept_once_its_rows_are_gone() {
    use tidings_core::OutboxAdmin;

    let store = store(Retention::Delete).await;
    let mut ctx = store.begin().await.unwrap();
    ctx.outbox()
        .stage(&ORDER_EVENTS, "order.placed", &1)
        .unwrap();
    ctx.flush().await.unwrap();
    ctx.rollback().await.unwrap();
    assert!(
        store.routes().await.unwrap().is_empty(),
        "a rolled-back route"
    );

    // The same store stages the route again: the rollback taught it nothing.
    stage_with_id(&store, Uuid::now_v7()).await;
    let schema = store.options().get_schema();
    let delete = format!("delete from \"{schema}\".tidings_outbox");
    run_sql(store.pool(), delete).await;
    assert_eq!(row_count(&store).await, 0);
    assert_eq!(
        store.routes().await.unwrap(),
        [ORDER_EVENTS.route().name.as_ref()]
    );

    // A second store of the same tables finds the route recorded.
    let other = PgOutboxStore::new(store.pool().clone(), store.options().clone()).unwrap();
    stage_with_id(&other, Uuid::now_v7()).await;
    let recorded = format!("select count(*) from \"{schema}\".tidings_outbox_routes");
    let count: i64 = sqlx::query_scalar(AssertSqlSafe(recorded))
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(count, 1);
    drop_schema(&store).await;
}

#[tokio::test]
async fn a_handler_s_unique_violation_reads_once_without_the_server_line() {
    let store = store(Retention::Delete).await;
    let table = create_orders(&store).await;
    let insert = format!("insert into {table} (id) values (7)");
    sqlx::raw_sql(AssertSqlSafe(insert.clone()))
        .execute(store.pool())
        .await
        .unwrap();
    let error = sqlx::raw_sql(AssertSqlSafe(insert))
        .execute(store.pool())
        .await
        .unwrap_err();
    let reason = tidings_core::port::error_chain(&error);
    assert!(
        reason.contains("duplicate key value violates unique constraint"),
        "{reason}"
    );
    assert_eq!(reason.matches("duplicate key").count(), 1, "{reason}");
    assert!(!reason.contains("at line"), "{reason}");
    drop_schema(&store).await;
}
