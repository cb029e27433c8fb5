//! stage: concurrent transactions, each inserting one business row and
//! staging one event, against the same transactions with the event
//! inserted by hand-written SQL.
//!
//! Staging is measured twice: as it runs where no relay listens in another
//! process (relays in the staging process are woken directly, so no hint
//! is sent), and with a listener in another process, which every burst of
//! commits then sends a wake-up hint. The goal applies to the first; the
//! second shows what the hints cost.
//!
//! The sides alternate in rounds on tables of their own, in every order,
//! so a change in the machine's load during the run falls on all of them
//! and none always follows the same other side.

use std::time::Duration;

use sqlx::AssertSqlSafe;
use tidings_core::Wakeup;
use tidings_postgres::{PgOutboxStore, PgWakeupSource, Retention};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::clients::run_clients;
use crate::cpu::CpuTime;
use crate::env::{Env, outbox_table, spec, table_in};
use crate::payload::Payload;
use crate::report::{Figure, Goal, Report};
use crate::rounds;
use crate::sizes::Sizes;

const NAME: &str = "stage";
/// Rounds each side runs, alternating: every order of the three sides
/// ([`rounds::balanced`]) twice, so each side runs first, second and last
/// equally often.
const ROUNDS: usize = 12;

pub(super) async fn run(env: &Env, sizes: &Sizes, report: Report<'_>) -> anyhow::Result<()> {
    let stores = Stores {
        raw: env.store("stage_raw", Retention::Delete).await?,
        unheard: env.store("stage", Retention::Delete).await?,
        heard: env.store("stage_heard", Retention::Delete).await?,
    };
    let result = measure(&stores, sizes).await;
    for store in [&stores.raw, &stores.unheard, &stores.heard] {
        env.drop_store(store).await?;
    }
    let took = result?;
    let total = sizes.stage_transactions.div_ceil(ROUNDS) * ROUNDS;
    let raw_rate = Figure::rate(NAME, "raw two-row transactions", total, took.raw);
    report(raw_rate.clone());
    report(
        Figure::rate(NAME, "staged transactions", total, took.unheard)
            .limit(raw_rate.value)
            .goal(Goal::RatioAtLeast(0.95)),
    );
    report(
        Figure::rate(
            NAME,
            "staged transactions, a relay listening in another process",
            total,
            took.heard,
        )
        .limit(raw_rate.value),
    );
    let sides = [
        (Side::Raw, "raw"),
        (Side::Unheard, "staged"),
        (Side::Heard, "staged, heard"),
    ];
    for (side, name) in sides {
        report(Figure::cpu_per_thousand(
            NAME,
            name,
            took.cpu[side as usize],
            total,
        ));
    }
    Ok(())
}

/// A table for each side.
struct Stores {
    raw: PgOutboxStore,
    /// Staged into with no listener anywhere.
    unheard: PgOutboxStore,
    /// Staged into while a listener outside the store waits for hints.
    heard: PgOutboxStore,
}

/// The time each side took over all rounds, and the CPU time it cost.
#[derive(Default)]
struct Took {
    raw: Duration,
    unheard: Duration,
    heard: Duration,
    cpu: [CpuTime; 3],
}

async fn measure(stores: &Stores, sizes: &Sizes) -> anyhow::Result<Took> {
    for store in [&stores.raw, &stores.unheard, &stores.heard] {
        create_orders(store).await?;
    }
    // Made apart from the store, as in another process: the store cannot
    // wake it directly, so it hints.
    let cancel = CancellationToken::new();
    let heard = &stores.heard;
    let listener = PgWakeupSource::new(heard.pool().clone(), heard.channel(), Wakeup::new())
        .spawn(cancel.clone());
    let result = rounds(stores, sizes).await;
    cancel.cancel();
    listener.await?;
    result
}

async fn rounds(stores: &Stores, sizes: &Sizes) -> anyhow::Result<Took> {
    let (clients, per_round) = (sizes.clients, sizes.stage_transactions.div_ceil(ROUNDS));
    let mut took = Took::default();
    let orders = rounds::balanced([Side::Raw, Side::Unheard, Side::Heard]);
    for round in 0..ROUNDS {
        for side in orders[round % orders.len()] {
            let before = CpuTime::now();
            match side {
                Side::Raw => took.raw += stage_raw(&stores.raw, clients, per_round).await?,
                Side::Unheard => {
                    took.unheard += stage_tidings(&stores.unheard, clients, per_round).await?
                }
                Side::Heard => {
                    took.heard += stage_tidings(&stores.heard, clients, per_round).await?
                }
            }
            took.cpu[side as usize] += CpuTime::now() - before;
        }
    }
    Ok(took)
}

/// The three sides of a round.
#[derive(Debug, Clone, Copy)]
enum Side {
    Raw,
    Unheard,
    Heard,
}

pub(super) async fn create_orders(store: &PgOutboxStore) -> anyhow::Result<()> {
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

pub(super) async fn stage_tidings(
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

pub(super) async fn stage_raw(
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
                .bind(spec.route().destination.as_deref().unwrap_or_default())
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
