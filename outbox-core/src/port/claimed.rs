//! What a claim took, as every store's batch holds it.

use super::{ClaimCursor, LeaseToken, OutboxRecord};

/// The rows a claim took under one lease, and where a claim going on from
/// it may start. Each store's [`ClaimedBatch`](super::ClaimedBatch) holds
/// one and hands it out through [`rows`](super::ClaimedBatch::rows), which
/// gives the batch its lease, records and cursor.
///
/// ```
/// use tidings_core::{ClaimedRows, LeaseToken};
/// use uuid::Uuid;
///
/// let rows = ClaimedRows::new(LeaseToken(Uuid::nil()), Vec::new());
/// assert!(rows.records.is_empty());
/// assert_eq!(rows.cursor, None);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimedRows {
    /// The claim's token.
    pub lease: LeaseToken,
    /// The claimed rows, oldest first.
    pub records: Vec<OutboxRecord>,
    /// Where a claim going on from this one may start; `None` where the
    /// store cannot start a claim there.
    pub cursor: Option<ClaimCursor>,
}

impl ClaimedRows {
    /// `records` claimed under `lease`, with no cursor.
    pub fn new(lease: LeaseToken, records: Vec<OutboxRecord>) -> Self {
        Self {
            lease,
            records,
            cursor: None,
        }
    }

    /// The rows, saying a claim may go on past `cursor`.
    pub fn going_on_past(self, cursor: Option<ClaimCursor>) -> Self {
        Self { cursor, ..self }
    }
}
