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
