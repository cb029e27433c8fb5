//! The billing consumer's handler.

use tidings::postgres::PgContext;
use tidings::postgres::sqlx;
use tidings::prelude::*;
use tidings_examples::orders::OrderPlaced;

/// Writes the order's invoice in the inbox's transaction; an amount below
/// zero can never be billed, so its event is parked.
pub(crate) async fn bill(
    msg: Message<OrderPlaced>,
    tx: TxHandle<PgContext<'static>>,
) -> Result<(), HandlerError> {
    let order = &msg.payload;
    if order.amount_cents < 0 {
        return Err(HandlerError::permanent(format!(
            "order {} has a negative amount",
            order.order_id
        )));
    }
    let mut ctx = tx.lock().await;
    sqlx::query("insert into invoices (order_id, amount_cents) values ($1, $2)")
        .bind(order.order_id)
        .bind(order.amount_cents)
        .execute(ctx.tx())
        .await?;
    tracing::debug!(order.id = order.order_id, "invoiced");
    Ok(())
}
