//! Where a claim may start in a route.
//!
//! A drain working through a backlog holds the rows of its last batches
//! while it claims the next, and a claim that starts from the oldest row
//! of the route walks past every one of them (and past rows finished
//! since, until the database cleans them away) before it reaches rows it
//! may take. A store that can start a claim further on returns a
//! [`ClaimCursor`] with each batch ([`ClaimedBatch::cursor`]); the relay
//! hands it back with its next claim ([`ClaimRequest::after`]), and the
//! store takes only rows past it.
//!
//! Rows at or before a cursor may still be claimable: committed after
//! rows staged later, released by a claim that did not settle them, or due
//! again after a retry's delay. The relay leaves them to a claim without a
//! cursor, which it makes every few claims and before a drain ends.
//!
//! [`ClaimedBatch::cursor`]: super::ClaimedBatch::cursor
//! [`ClaimRequest::after`]: super::ClaimRequest::after

use crate::{OrderingMode, Route};

/// A position in a route's claim order, as the store that returned it
/// reads it: the row id of a batch's last row, say. Only that store gives
/// it meaning.
///
/// ```
/// use tidings_core::ClaimCursor;
///
/// let after = ClaimCursor(41);
/// assert!(after < ClaimCursor(42));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClaimCursor(pub i64);

impl ClaimCursor {
    /// Whether claims of `route` may go on past a cursor: those of an
    /// unordered route, in staging order. A per-key claim must see every
    /// earlier row of a key, and rows in clock order are not in row order,
    /// so those claims start from the route's oldest row.
    ///
    /// ```
    /// use tidings_core::{ClaimCursor, OutboxSpec};
    ///
    /// static ORDERS: OutboxSpec<u64> = OutboxSpec::json("orders").destination("orders");
    /// static BY_KEY: OutboxSpec<u64> = OutboxSpec::json("orders").destination("orders").per_key();
    /// assert!(ClaimCursor::fits(ORDERS.route()));
    /// assert!(!ClaimCursor::fits(BY_KEY.route()));
    /// ```
    pub fn fits(route: &Route) -> bool {
        route.ordering == OrderingMode::Unordered && !route.hlc_ordering
    }
}
