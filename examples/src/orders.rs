//! What the order-service examples share, whatever their store: the
//! event, how many orders a run places, and how a run waits for what its
//! orders set off and says what it found.
#![allow(clippy::print_stdout)]

use std::fmt::Display;
use std::future::Future;
use std::time::Duration;

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use tidings_consumer::ConsumerReport;
use tidings_core::Message;
use tidings_core::lifecycle::LifecyclePlan;

/// The event.
#[derive(Debug, Serialize, Deserialize)]
pub struct OrderPlaced {
    /// The order.
    pub order_id: i64,
    /// What it costs.
    pub amount_cents: i64,
}

/// Orders each run places.
pub const ORDERS_TO_PLACE: i64 = 20;

/// How long a run waits for what its orders set off.
const PATIENCE: Duration = Duration::from_secs(30);

/// Runs `plan` while `place` places the orders, then until `settled`
/// answers true for the number that committed, or 30 s pass. Returns that
/// number.
///
/// # Errors
///
/// When placing the orders fails, or a step is still running once the
/// plan's shutdown timeout has passed.
pub async fn run_while_placing<N, S>(
    plan: LifecyclePlan,
    place: impl Future<Output = anyhow::Result<N>>,
    mut settled: impl FnMut(N) -> S,
) -> anyhow::Result<N>
where
    N: Copy,
    S: Future<Output = bool>,
{
    let mut outcome = None;
    plan.run_until(async {
        let placed = place.await;
        if let Ok(committed) = placed {
            let deadline = tokio::time::Instant::now() + PATIENCE;
            while !settled(committed).await && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        outcome = Some(placed);
    })
    .await?;
    outcome.context("the plan stopped before the orders were placed")?
}

/// Prints the invoice a billing handler wrote for `msg`'s order.
pub fn print_invoice(msg: &Message<OrderPlaced>) {
    let order = &msg.payload;
    println!(
        "invoiced order {} for {} cents (event {})",
        order.order_id,
        order.amount_cents,
        msg.event_id()
    );
}

/// Prints what a billing run found: the orders committed, the invoices
/// written and what the consumer reports.
///
/// # Errors
///
/// When an order has no invoice, or an invoice no order.
pub fn check_invoices<N: Display + PartialEq>(
    committed: N,
    invoices: N,
    consumer: &ConsumerReport,
) -> anyhow::Result<()> {
    println!("orders committed: {committed}, invoices written: {invoices}");
    println!(
        "consumer: {} processed, {} duplicates skipped, {} parked",
        consumer.processed, consumer.duplicates, consumer.parked
    );
    if invoices != committed {
        bail!("{committed} orders committed but {invoices} invoices written");
    }
    Ok(())
}
