//! Reading back what a claim that leaves its rows unread returns
//! (`claim_locked_take.sql`): each row's id and attempt counts.

use sqlx::Row;
use sqlx::postgres::PgRow;
use tidings_core::StoreError;

use crate::error::store_error;

/// A row a claim took unread: its id, and whether an earlier claim of it
/// died unsettled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TakenRow {
    pub(crate) id: i64,
    pub(crate) crashed: bool,
}

/// Decodes a take's rows as they arrive; after the first that cannot be
/// read, the rest are taken in and not decoded, and
/// [`finish`](Self::finish) reports that one.
pub(crate) struct TakenRows {
    rows: Vec<TakenRow>,
    error: Option<StoreError>,
}

impl TakenRows {
    /// A decoder with room for a claim of `limit` rows.
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            rows: Vec::with_capacity(limit),
            error: None,
        }
    }

    /// Decodes the next row.
    pub(crate) fn push(&mut self, row: &PgRow) {
        if self.error.is_none() {
            match TakenRow::decode(row) {
                Ok(row) => self.rows.push(row),
                Err(error) => self.error = Some(error),
            }
        }
    }

    /// The rows decoded, in the order they came, or the first that could
    /// not be; records their number as the current span's `claimed`.
    pub(crate) fn finish(self) -> Result<Vec<TakenRow>, StoreError> {
        if let Some(error) = self.error {
            return Err(error);
        }
        tracing::Span::current().record("claimed", self.rows.len());
        Ok(self.rows)
    }
}

impl TakenRow {
    /// Reads `id`, `attempts_started` (this claim counted) and
    /// `attempts_finished`, by position.
    fn decode(row: &PgRow) -> Result<Self, StoreError> {
        let id: i64 = row.try_get(0).map_err(store_error)?;
        let started: i32 = row.try_get(1).map_err(store_error)?;
        let finished: i32 = row.try_get(2).map_err(store_error)?;
        // As `OutboxRecord::crashes`: earlier claims that never settled.
        let crashed = i64::from(started) - 1 - i64::from(finished) > 0;
        Ok(Self { id, crashed })
    }
}
