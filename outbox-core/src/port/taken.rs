//! What a claim took, before its rows are read.
//!
//! Writing a claimed row's columns out costs a database more than finding
//! and locking the row: PostgreSQL spends about three quarters of a locked
//! claim of 1,000 rows on it. A store may therefore answer
//! [`OutboxStore::claim_unread`] as soon as it holds the rows, and read
//! them in [`ClaimedBatch::read`], so that a drain starts its next claim,
//! past this batch's cursor, while this one is read. Until then the batch
//! says what it took through [`ClaimedBatch::taken`]: enough for the relay
//! to tell whether more may wait and how wide to claim next.
//!
//! [`OutboxStore::claim_unread`]: super::OutboxStore::claim_unread
//! [`ClaimedBatch::read`]: super::ClaimedBatch::read
//! [`ClaimedBatch::taken`]: super::ClaimedBatch::taken

use super::OutboxRecord;

/// How many rows a claim took, and whether any of them had a crash counted
/// against it (an earlier claim of it died unsettled).
///
/// ```
/// use tidings_core::Taken;
///
/// assert_eq!(Taken::of(&[]), Taken { rows: 0, crashed: false });
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Taken {
    /// Rows claimed.
    pub rows: usize,
    /// Whether any of them crashed before.
    pub crashed: bool,
}

impl Taken {
    /// What a claim of `records` took.
    pub fn of(records: &[OutboxRecord]) -> Self {
        Self {
            rows: records.len(),
            crashed: records.iter().any(|r| r.crashes() > 0),
        }
    }
}
