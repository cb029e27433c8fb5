//! The billing consumer's handler: one invoice per `order.placed`, written
//! in the inbox's transaction.

use tidings::postgres::PgContext;
use tidings::postgres::sqlx;
use tidings::prelude::*;

use crate::OrderPlaced;

/// Writes the order's invoice. The inbox commits it with its mark, so a
/// redelivered event is skipped and `invoices` needs no unique key of its
/// own. An event for an order this database does not know can never
/// succeed, so it goes to the dead-letter queue.
pub(crate) async fn bill(
    msg: Message<OrderPlaced>,
    tx: TxHandle<PgContext<'static>>,
) -> Result<(), HandlerError> {
    let order = &msg.payload;
    let mut ctx = tx.lock().await;
    let known: Option<i64> = sqlx::query_scalar("select id from orders where id = $1")
        .bind(order.order_id)
        .fetch_optional(ctx.tx())
        .await?;
    if known.is_none() {
        let unknown = format!("unknown order {}", order.order_id);
        return Err(HandlerError::permanent(unknown));
    }
    sqlx::query("insert into invoices (order_id, amount_cents) values ($1, $2)")
        .bind(order.order_id)
        .bind(order.amount_cents)
        .execute(ctx.tx())
        .await?;
    tracing::debug!(order.id = order.order_id, event.id = %msg.event_id(), "order invoiced");
    Ok(())
}
