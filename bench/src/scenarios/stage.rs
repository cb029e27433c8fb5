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
use tidings_core::{OutboxSpec, Wakeup};
use tidings_postgres::{PgOutboxStore, PgWakeupSource, Retention};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::clients::run_clients;
use crate::cpu::CpuTime;
use crate::env::{Env, create_table, outbox_table, spec, table_in};
use crate::payload::Payload;
use crate::report::{Figure, Goal, Report};
use crate::rounds;
use crate::sizes::Sizes;

const NAME: &str = "stage";
/// Rounds each side runs, alternating: every order of the three sides
/// ([`rounds::balanced`]) twice, so each side runs first, second and last
/// equally often.
pub(super) const ROUNDS: usize = 12;

pub(super) async fn run(env: &Env, sizes: &Sizes, report: Report<'_>) -> anyhow::Result<()> {
    let stores = [
        env.store("stage_raw", Retention::Delete).await?,
        env.store("stage", Retention::Delete).await?,
        env.store("stage_heard", Retention::Delete).await?,
    ];
    let result = measure(&stores, sizes).await;
    for store in &stores {
        env.drop_store(store).await?;
    }
    let took = result?;
    let total = sizes.stage_transactions.div_ceil(ROUNDS) * ROUNDS;
    let raw_rate = Figure::rate(NAME, "raw two-row transactions", total, took.time[0]);
    report(raw_rate.clone());
    report(
        Figure::rate(NAME, "staged transactions", total, took.time[1])
            .limit(raw_rate.value)
            .goal(Goal::RatioAtLeast(0.95)),
    );
    report(
        Figure::rate(
            NAME,
            "staged transactions, a relay listening in another process",
            total,
            took.time[2],
        )
        .limit(raw_rate.value),
    );
    for (side, name) in ["raw", "staged", "staged, heard"].into_iter().enumerate() {
        report(Figure::cpu_per_thousand(NAME, name, took.cpu[side], total));
    }
    Ok(())
}

/// Measures the sides on `stores`: two-row transactions on the first;
/// staging with no listener anywhere on the second, and while a listener
/// outside the store waits for hints on the third.
async fn measure(stores: &[PgOutboxStore; 3], sizes: &Sizes) -> anyhow::Result<Took> {
    let [raw, unheard, heard] = stores;
    let orders = [
        Orders::create(raw).await?,
        Orders::create(unheard).await?,
        Orders::create(heard).await?,
    ];
    // Made apart from the store, as in another process: the store cannot
    // wake it directly, so it hints.
    let cancel = CancellationToken::new();
    let listener = PgWakeupSource::new(heard.pool().clone(), heard.channel(), Wakeup::new())
        .spawn(cancel.clone());
    let result = stage_rounds(&orders, sizes).await;
    cancel.cancel();
    listener.await?;
    result
}

/// The time each side took over all rounds and its CPU time, in the order
/// of the sides.
#[derive(Default)]
pub(super) struct Took {
    pub(super) time: [Duration; 3],
    pub(super) cpu: [CpuTime; 3],
}

/// Runs [`ROUNDS`] rounds of `sizes`' transactions on each of `orders`,
/// the sides in the orders of [`rounds::balanced`]: raw two-row
/// transactions on the first, staged ones on the others.
pub(super) async fn stage_rounds(orders: &[Orders; 3], sizes: &Sizes) -> anyhow::Result<Took> {
    let (clients, per_round) = (sizes.clients, sizes.stage_transactions.div_ceil(ROUNDS));
    let mut took = Took::default();
    let sides = rounds::balanced([0, 1, 2]);
    for round in 0..ROUNDS {
        for side in sides[round % sides.len()] {
            let before = CpuTime::now();
            took.time[side] += match side {
                0 => orders[side].stage_raw(clients, per_round).await?,
                _ => orders[side].stage_tidings(clients, per_round).await?,
            };
            took.cpu[side] += CpuTime::now() - before;
        }
    }
    Ok(took)
}

/// An orders table beside a store's outbox, and the route its orders'
/// events are staged to: each side's transactions insert an order and its
/// event.
pub(super) struct Orders {
    store: PgOutboxStore,
    spec: &'static OutboxSpec<Payload>,
    /// The insert of one order.
    insert: String,
}

impl Orders {
    /// Creates the orders table beside `store`'s outbox.
    pub(super) async fn create(store: &PgOutboxStore) -> anyhow::Result<Self> {
        let columns =
            "id bigserial primary key, customer text not null, amount_cents bigint not null";
        create_table(store, "orders", columns).await?;
        Ok(Self {
            store: store.clone(),
            spec: spec("bench-stage"),
            insert: format!(
                "insert into {} (customer, amount_cents) values ($1, $2)",
                table_in(store, "orders")
            ),
        })
    }

    /// Commits `count` orders from `clients` concurrent clients, each with
    /// its event staged through tidings; returns how long it took.
    pub(super) async fn stage_tidings(
        &self,
        clients: usize,
        count: usize,
    ) -> anyhow::Result<Duration> {
        let (store, order_sql, spec) = (self.store.clone(), self.insert.clone(), self.spec);
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

    /// Commits `count` orders from `clients` concurrent clients, each with
    /// its event inserted by hand-written SQL; returns how long it took.
    pub(super) async fn stage_raw(&self, clients: usize, count: usize) -> anyhow::Result<Duration> {
        let (order_sql, spec) = (self.insert.clone(), self.spec);
        let event_sql = format!(
            "insert into {} (event_id, route, destination, event_type, payload, content_type, \
             occurred_at) values ($1, $2, $3, $4, $5, $6, now())",
            outbox_table(&self.store)
        );
        let pool = self.store.pool().clone();
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
}
