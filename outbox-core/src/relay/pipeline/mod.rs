//! A pipelined drain for unordered routes: the next batch is claimed while
//! the last one is published, a batch is settled as soon as the broker has
//! answered for it, and, while claims are wide, the next batch is published
//! while the one before awaits its answers, once the publisher says the
//! earlier one's messages are queued ahead of it
//! ([`Publisher::send`]). A backlog drains at the pace of
//! the slowest of the three steps instead of their sum.
//!
//! Claims and settles run each on a connection of their own, so the
//! database works on them at once. A drain holds at most [`HELD`] batches
//! besides the one it is claiming, each under its own lease; with
//! [`drains`](RelayOptions::drains) above one, each drain holds its own.
//! While claims are narrow, after a row crashed, one batch at a time is
//! published, so a crash still fails at most a window's rows.
//!
//! A drain's claims go on past the last batch's cursor while they come back
//! full and wide, and start from the route's oldest row once in
//! [`UNBOUNDED_EVERY`] claims and whenever one past a cursor comes back
//! short, so a drain ends only on a short claim from the oldest row.
//!
//! A batch once claimed is always published and settled: after a failed
//! settle or claim, the drain stops claiming, finishes what it holds and
//! then reports the first error, so no claim is left to expire and count
//! as a crash.

mod flight;
#[cfg(test)]
mod tests;

use futures::future::join;
use tracing::Instrument;

use self::flight::Flight;
use super::lane::Lane;
use super::pass::{claim, pass_span};
use super::width::ClaimWidth;
use super::{PassReport, RelayOptions};
use crate::{ClaimedBatch, OutboxStore, Publisher, StoreError};

/// How many batches a drain publishes at once while claims are wide.
const PUBLISHING: usize = 2;

/// How many batches a drain holds at once, claimed, publishing or
/// settling, before it claims another: with the claim under way, three
/// batches' rows are locked at most. More measured no faster and made
/// parallel drains' claims skip more locked rows.
const HELD: usize = 2;

/// A drain's claims go on past the last batch's cursor
/// ([`ClaimCursor`](crate::ClaimCursor)) but for one in this many, which
/// starts from the route's oldest row, so a row left behind the cursors
/// waits this many batches at most while a backlog lasts.
const UNBOUNDED_EVERY: usize = 8;

/// Drains an unordered route's backlog: one pipelined drain, joined by
/// [`drains`](RelayOptions::drains) − 1 more once its first claim comes
/// back full while claims are wide; returns the sum, or the first error
/// once every drain has settled what it claimed.
pub(super) async fn drain_parallel<S: OutboxStore, P: Publisher>(
    store: &S,
    publisher: &P,
    lane: &Lane,
    config: &RelayOptions,
    width: &ClaimWidth,
) -> Result<PassReport, StoreError> {
    let first = claim(store, lane, config, width, None)
        .instrument(pass_span(&lane.route))
        .await?;
    let full = first.0.records().len() >= first.1;
    let more = match full && width.is_wide() {
        true => config.drains - 1,
        false => 0,
    };
    let drain = |first| {
        let flight = Flight::new(store, publisher, lane, config, width, first);
        flight.drain().instrument(pass_span(&lane.route))
    };
    let others = (0..more).map(|_| drain(None));
    let (first, others) = join(drain(Some(first)), futures::future::join_all(others)).await;
    let mut total = first?;
    for other in others {
        total.add(other?);
    }
    Ok(total)
}
