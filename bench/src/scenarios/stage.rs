//! stage: concurrent transactions, each inserting one business row and
//! staging one event, against the same transactions with the event
//! inserted by hand-written SQL.
//!
//! The two sides alternate in rounds on tables of their own, so a change in
//! the machine's load during the run falls on both.

use std::time::Duration;

use sqlx::AssertSqlSafe;
use tidings_postgres::{PgOutboxStore, Retention};
use uuid::Uuid;

use crate::args::Sizes;
use crate::clients::run_clients;
use crate::env::{Env, outbox_table, spec, table_in};
use crate::payload::Payload;
use crate::report::{Figure, Goal};

const NAME: &str = "stage";
/// Rounds each side runs, alternating.
const ROUNDS: usize = 10;

pub(super) async fn run(
    env: &Env,
    sizes: &Sizes,
    report: &mut dyn FnMut(Figure),
) -> anyhow::Result<()> {
    let tidings = env.store("stage", Retention::Delete).await?;
    let raw = env.store("stage_raw", Retention::Delete).await?;
    let result = measure(&tidings, &raw, sizes).await;
    env.drop_store(&tidings).await?;
    env.drop_store(&raw).await?;
    let (tidings_took, raw_took) = result?;
    let total = sizes.stage_transactions.div_ceil(ROUNDS) * ROUNDS;
    let raw_rate = Figure::rate(NAME, "raw two-row transactions", total, raw_took);
    report(raw_rate.clone());
    report(
        Figure::rate(NAME, "staged transactions", total, tidings_took)
            .limit(raw_rate.value)
            .goal(Goal::RatioAtLeast(0.95)),
    );
    Ok(())
}

async fn measure(
    tidings: &PgOutboxStore,
    raw: &PgOutboxStore,
    sizes: &Sizes,
) -> anyhow::Result<(Duration, Duration)> {
    create_orders(tidings).await?;
    create_orders(raw).await?;
    let per_round = sizes.stage_transactions.div_ceil(ROUNDS);
    let (mut tidings_took, mut raw_took) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..ROUNDS {
        raw_took += stage_raw(raw, sizes.clients, per_round).await?;
        tidings_took += stage_tidings(tidings, sizes.clients, per_round).await?;
    }
    Ok((tidings_took, raw_took))
}

async fn create_orders(store: &PgOutboxStore) -> anyhow::Result<()> {
    let sql = format!(
        "create table {} (id bigserial primary key, customer text not null, \
         amount_cents bigint not null)",
        table_in(store, "orders")
    );
    sqlx::query(AssertSqlSafe(sql))
        .execute(store.pool())
        .await?;
    Ok(())
}

fn insert_order_sql(store: &PgOutboxStore) -> String {
    format!(
        "insert into {} (customer, amount_cents) values ($1, $2)",
        table_in(store, "orders")
    )
}

async fn stage_tidings(
    store: &PgOutboxStore,
    clients: usize,
    count: usize,
) -> anyhow::Result<Duration> {
    let spec = spec("bench-stage");
    let order_sql = insert_order_sql(store);
    let store = store.clone();
    run_clients(clients, count, move |i| {
        let (store, order_sql) = (store.clone(), order_sql.clone());
        async move {
            let payload = Payload::new(i as i64);
            let mut ctx = store.begin().await?;
            sqlx::query(AssertSqlSafe(order_sql))
                .bind(&payload.customer)
                .bind(payload.amount_cents)
                .execute(ctx.tx())
                .await?;
            ctx.outbox().stage(spec, "order.placed", &payload)?;
            ctx.commit().await?;
            Ok(())
        }
    })
    .await
}

async fn stage_raw(
    store: &PgOutboxStore,
    clients: usize,
    count: usize,
) -> anyhow::Result<Duration> {
    let spec = spec("bench-stage");
    let order_sql = insert_order_sql(store);
    let event_sql = format!(
        "insert into {} (event_id, route, destination, event_type, payload, content_type, \
         occurred_at) values ($1, $2, $3, $4, $5, $6, now())",
        outbox_table(store)
    );
    let pool = store.pool().clone();
    run_clients(clients, count, move |i| {
        let (pool, order_sql, event_sql) = (pool.clone(), order_sql.clone(), event_sql.clone());
        async move {
            let payload = Payload::new(i as i64);
            let body = serde_json::to_vec(&payload)?;
            let mut tx = pool.begin().await?;
            sqlx::query(AssertSqlSafe(order_sql))
                .bind(&payload.customer)
                .bind(payload.amount_cents)
                .execute(&mut *tx)
                .await?;
            sqlx::query(AssertSqlSafe(event_sql))
                .bind(Uuid::now_v7())
                .bind(spec.name())
                .bind(spec.route().destination.unwrap_or_default())
                .bind("order.placed")
                .bind(body)
                .bind("application/json")
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(())
        }
    })
    .await
}
