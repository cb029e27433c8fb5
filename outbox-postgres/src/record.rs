//! Reading claimed rows back into records.

use std::time::SystemTime;

use bytes::Bytes;
use sqlx::Row;
use sqlx::postgres::PgRow;
use sqlx::types::time::OffsetDateTime;
use tidings_core::{Envelope, Headers, Hlc, OutboxRecord, StoreError};
use uuid::Uuid;

use crate::error::store_error;

/// A claimed row: its position in the table (for ordering the batch) and
/// the record.
pub(crate) struct ClaimedRow {
    /// The row's sequence number, in staging order.
    pub(crate) id: i64,
    /// The packed hybrid-clock stamp, where the row has one.
    pub(crate) hlc: Option<i64>,
    /// The record handed to the relay.
    pub(crate) record: OutboxRecord,
}

impl ClaimedRow {
    /// Decodes every row a claim statement returned, and records their
    /// number as the current span's `claimed`.
    pub(crate) fn decode_all(rows: &[PgRow]) -> Result<Vec<Self>, StoreError> {
        let rows = rows
            .iter()
            .map(Self::decode)
            .collect::<Result<Vec<_>, _>>()?;
        tracing::Span::current().record("claimed", rows.len());
        Ok(rows)
    }

    /// Decodes a row returned by a claim statement.
    pub(crate) fn decode(row: &PgRow) -> Result<Self, StoreError> {
        let event_id: Uuid = row.try_get("event_id").map_err(store_error)?;
        let corrupt = |reason: String| StoreError::Corrupt { event_id, reason };
        let headers: String = row.try_get("headers").map_err(store_error)?;
        let headers: Headers = serde_json::from_str(&headers)
            .map_err(|e| corrupt(format!("headers are not a JSON object of strings: {e}")))?;
        let attempts_started = count(row, "attempts_started").map_err(corrupt)?;
        let attempts_finished = count(row, "attempts_finished").map_err(corrupt)?;
        let occurred_at: OffsetDateTime = row.try_get("occurred_at").map_err(store_error)?;
        let hlc: Option<i64> = row.try_get("hlc").map_err(store_error)?;
        let payload: Vec<u8> = row.try_get("payload").map_err(store_error)?;
        let envelope = Envelope {
            event_id,
            event_type: row.try_get("event_type").map_err(store_error)?,
            route: row.try_get("route").map_err(store_error)?,
            destination: row.try_get("destination").map_err(store_error)?,
            payload: Bytes::from(payload),
            content_type: row.try_get("content_type").map_err(store_error)?,
            headers,
            ordering_key: row.try_get("ordering_key").map_err(store_error)?,
            correlation_id: row.try_get("correlation_id").map_err(store_error)?,
            causation_id: row.try_get("causation_id").map_err(store_error)?,
            tenant_id: row.try_get("tenant_id").map_err(store_error)?,
            occurred_at: SystemTime::from(occurred_at),
            hlc: hlc.map(|h| Hlc::from_u64(h as u64)),
            attempts: attempts_started,
        };
        Ok(Self {
            id: row.try_get("id").map_err(store_error)?,
            hlc,
            record: OutboxRecord {
                envelope,
                attempts_started,
                attempts_finished,
                last_error: row.try_get("last_error").map_err(store_error)?,
            },
        })
    }
}

fn count(row: &PgRow, column: &str) -> Result<u32, String> {
    let value: i32 = row.try_get(column).map_err(|e| e.to_string())?;
    u32::try_from(value).map_err(|_| format!("{column} is negative ({value})"))
}

/// Orders claimed rows as the route asks: staging order, or hybrid-clock
/// order (rows without a stamp first) with staging order breaking ties.
pub(crate) fn into_records(mut rows: Vec<ClaimedRow>, hlc_ordering: bool) -> Vec<OutboxRecord> {
    if hlc_ordering {
        rows.sort_by_key(|r| (r.hlc, r.id));
    } else {
        rows.sort_by_key(|r| r.id);
    }
    rows.into_iter().map(|r| r.record).collect()
}
