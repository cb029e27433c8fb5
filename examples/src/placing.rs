//! Placing orders on PostgreSQL: each order and its `order.placed` event
//! written in one transaction, so the event exists exactly when the order
//! does.

use std::time::Duration;

use tidings::postgres::sqlx::{self, AssertSqlSafe};
use tidings::postgres::{PgContext, PgOutboxStore};
use tidings::{OutboxSpec, Staged};

use crate::orders::{ORDERS_TO_PLACE, OrderPlaced};

/// Writes an order of `amount_cents` with `insert`, a statement that
/// returns the new order's id, and stages its `order.placed` event on
/// `spec`, both in `ctx`; returns the staged event, for the caller to key.
///
/// # Errors
///
/// When the insert fails or the event does not stage.
pub async fn place_order<'c>(
    ctx: &'c mut PgContext<'static>,
    insert: &str,
    spec: &OutboxSpec<OrderPlaced>,
    amount_cents: i64,
) -> anyhow::Result<Staged<'c>> {
    // Not prepared by name, so it also passes a transaction pooler.
    let order_id: i64 = sqlx::query_scalar(AssertSqlSafe(insert))
        .persistent(false)
        .bind(amount_cents)
        .fetch_one(ctx.tx())
        .await?;
    let event = OrderPlaced {
        order_id,
        amount_cents,
    };
    Ok(ctx.outbox().stage(spec, "order.placed", &event)?)
}

/// Places [`ORDERS_TO_PLACE`] orders with `insert` (see [`place_order`]),
/// each with its event of `spec` in one transaction and in the order of
/// its customer's events (one of three customers), `pause` apart; one in
/// five rolls back, taking its event with it. Returns how many committed.
///
/// # Errors
///
/// When a transaction cannot be opened, an insert, the staging of an event
/// or a commit or rollback fails; orders committed before it stay.
pub async fn place_orders(
    store: &PgOutboxStore,
    insert: &str,
    spec: &OutboxSpec<OrderPlaced>,
    pause: Duration,
) -> anyhow::Result<u64> {
    let mut committed = 0;
    for n in 1..=ORDERS_TO_PLACE {
        let mut ctx = store.begin().await?;
        place_order(&mut ctx, insert, spec, 1_000 + n)
            .await?
            .ordering_key(format!("customer-{}", n % 3));
        if n % 5 == 0 {
            ctx.rollback().await?;
        } else {
            ctx.commit().await?;
            committed += 1;
        }
        if !pause.is_zero() {
            tokio::time::sleep(pause).await;
        }
    }
    Ok(committed)
}
