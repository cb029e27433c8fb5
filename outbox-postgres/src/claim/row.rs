//! Reading claimed rows back into records.

use std::pin::pin;
use std::time::SystemTime;

use bytes::Bytes;
use futures::{Stream, TryStreamExt};
use sqlx::postgres::{PgRow, PgValueFormat, PgValueRef};
use sqlx::types::time::OffsetDateTime;
use sqlx::{Column, Decode, Postgres, Row, Type};
use tidings_core::{Headers, Hlc, OutboxRecord, StoreError};
use uuid::Uuid;

use crate::claim::unreadable::Unreadable;
use crate::columns::{self, EventColumns};
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

/// The columns a claim statement returns, in the order both claim
/// statements (`claim.sql`, `claim_locked.sql`) list them; rows are read
/// by position, once the first row's columns are found to be these.
const COLUMNS: [&str; 18] = [
    "id",
    "event_id",
    "route",
    "destination",
    "event_type",
    "payload",
    "content_type",
    "headers",
    "ordering_key",
    "correlation_id",
    "causation_id",
    "tenant_id",
    "occurred_at",
    "hlc",
    "expires_at",
    "attempts_started",
    "attempts_finished",
    "last_error",
];

/// Decodes a claim statement's rows one at a time, as they arrive: the
/// server sends a claim's rows as it locks them, so the rows come in over
/// the statement's whole run, and a claim read this way is decoded when
/// its last row is in instead of a decode's length after.
///
/// The first row's columns are checked to be [`COLUMNS`] and its fields'
/// types checked; every row of a statement has the same column types, so
/// the later rows are decoded without the check. A row whose fields hold
/// what no record can (see [`unreadable`](super::unreadable)) is kept
/// aside by event id and the rest go on. After an error of any other kind
/// the rest are taken in and not decoded, so the connection ends the
/// statement as usual; [`finish`](Self::finish) reports it.
pub(crate) struct RowDecoder {
    rows: Vec<ClaimedRow>,
    unreadable: Unreadable,
    error: Option<StoreError>,
}

impl RowDecoder {
    /// A decoder with room for a claim of `limit` rows.
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            rows: Vec::with_capacity(limit),
            unreadable: Unreadable::default(),
            error: None,
        }
    }

    /// Reads a claim of up to `limit` rows from `rows`, decoding each as
    /// it arrives; the decoder's [`finish`](Self::finish) gives them.
    pub(crate) async fn read(
        limit: usize,
        rows: impl Stream<Item = Result<PgRow, sqlx::Error>>,
    ) -> Result<Self, sqlx::Error> {
        let mut decoder = Self::new(limit);
        let mut rows = pin!(rows);
        while let Some(row) = rows.try_next().await? {
            decoder.push(&row);
        }
        Ok(decoder)
    }

    /// Decodes the next row.
    pub(crate) fn push(&mut self, row: &PgRow) {
        if self.error.is_some() {
            return;
        }
        // Checked until a row has been read whole; a row set aside does
        // not count, as its later fields were never checked.
        let checked = self.rows.is_empty();
        let decoded = match checked {
            true => check_columns(row).and_then(|()| ClaimedRow::decode(row, true)),
            false => ClaimedRow::decode(row, false),
        };
        match decoded {
            Ok(row) => self.rows.push(row),
            Err(StoreError::Corrupt { event_id, reason }) => self.unreadable.push(event_id, reason),
            Err(error) => self.error = Some(error),
        }
    }

    /// The rows decoded, in the order they came, and those that could not
    /// be read, or the error that stopped the decoding.
    pub(crate) fn finish(self) -> Result<(Vec<ClaimedRow>, Unreadable), StoreError> {
        if let Some(error) = self.error {
            return Err(error);
        }
        Ok((self.rows, self.unreadable))
    }
}

/// Checks that a claim statement returned [`COLUMNS`], in that order.
fn check_columns(row: &PgRow) -> Result<(), StoreError> {
    let names = row.columns().iter().map(|c| c.name());
    if names.eq(COLUMNS) {
        return Ok(());
    }
    let found: Vec<_> = row.columns().iter().map(|c| c.name()).collect();
    let error = format!("a claim returned the columns {found:?}, not {COLUMNS:?}");
    Err(StoreError::Backend(error.into()))
}

impl ClaimedRow {
    /// Decodes a claimed row, its fields in the order of [`COLUMNS`],
    /// their types `checked` against the columns' or not.
    fn decode(row: &PgRow, checked: bool) -> Result<Self, StoreError> {
        let fields = &mut Fields {
            row,
            next: 0,
            checked,
        };
        let id = fields.next()?;
        let event_id: Uuid = fields.next()?;
        let mut envelope = columns::envelope(&mut EventFields { fields, event_id }, event_id)?;
        let corrupt = |reason: String| StoreError::Corrupt { event_id, reason };
        let attempts_started = fields.count().map_err(corrupt)?;
        let attempts_finished = fields.count().map_err(corrupt)?;
        envelope.attempts = attempts_started;
        Ok(Self {
            id,
            hlc: envelope.hlc.map(|hlc| hlc.as_u64() as i64),
            record: OutboxRecord {
                envelope,
                attempts_started,
                attempts_finished,
                last_error: fields.next()?,
            },
        })
    }
}

/// A claimed row's event columns, an unreadable one reported as corrupt
/// under the row's event id.
struct EventFields<'f, 'r> {
    fields: &'f mut Fields<'r>,
    event_id: Uuid,
}

impl EventFields<'_, '_> {
    fn corrupt(&self, reason: String) -> StoreError {
        StoreError::Corrupt {
            event_id: self.event_id,
            reason,
        }
    }
}

impl EventColumns for EventFields<'_, '_> {
    type Error = StoreError;

    fn text(&mut self, _column: &'static str) -> Result<String, StoreError> {
        self.fields.next()
    }

    fn optional(&mut self, _column: &'static str) -> Result<Option<String>, StoreError> {
        self.fields.next()
    }

    fn payload(&mut self) -> Result<Bytes, StoreError> {
        self.fields.bytes().map_err(|e| self.corrupt(e))
    }

    fn headers(&mut self) -> Result<Headers, StoreError> {
        let headers: String = self.fields.next()?;
        serde_json::from_str(&headers)
            .map_err(|e| self.corrupt(format!("headers are not a JSON object of strings: {e}")))
    }

    fn occurred_at(&mut self) -> Result<SystemTime, StoreError> {
        let at = self.fields.timestamp().map_err(|e| self.corrupt(e))?;
        Ok(SystemTime::from(at))
    }

    fn hlc(&mut self) -> Result<Option<Hlc>, StoreError> {
        let hlc: Option<i64> = self.fields.next()?;
        Ok(hlc.map(|h| Hlc::from_u64(h as u64)))
    }

    fn expires_at(&mut self) -> Result<Option<SystemTime>, StoreError> {
        let at: Option<OffsetDateTime> = self.fields.next()?;
        Ok(at.map(SystemTime::from))
    }
}

/// The fields of a row, read one after the other, their types checked
/// against the column's or, where an earlier row of the same statement
/// was checked, not.
struct Fields<'r> {
    row: &'r PgRow,
    next: usize,
    checked: bool,
}

impl Fields<'_> {
    fn next<'r, T>(&'r mut self) -> Result<T, StoreError>
    where
        T: Decode<'r, Postgres> + Type<Postgres>,
    {
        self.next += 1;
        let index = self.next - 1;
        match self.checked {
            true => self.row.try_get(index),
            false => self.row.try_get_unchecked(index),
        }
        .map_err(store_error)
    }

    /// An attempt count, which may not be negative.
    fn count(&mut self) -> Result<u32, String> {
        let value: i32 = self.next().map_err(|e| e.to_string())?;
        u32::try_from(value)
            .map_err(|_| format!("{} is negative ({value})", COLUMNS[self.next - 1]))
    }

    /// A `timestamptz` field.
    fn timestamp(&mut self) -> Result<OffsetDateTime, String> {
        OffsetDateTime::decode(self.binary()?).map_err(|e| e.to_string())
    }

    /// A `bytea` field, as it is.
    fn bytes(&mut self) -> Result<Bytes, String> {
        let value = self.binary()?;
        let raw = value.as_bytes().map_err(|e| e.to_string())?;
        Ok(Bytes::copy_from_slice(raw))
    }

    /// The next field as the server sent it, in the binary format every
    /// claim asks for.
    fn binary(&mut self) -> Result<PgValueRef<'_>, String> {
        self.next += 1;
        let column = COLUMNS[self.next - 1];
        let value = self.row.try_get_raw(self.next - 1);
        let value = value.map_err(|e| e.to_string())?;
        match value.format() {
            PgValueFormat::Binary => Ok(value),
            PgValueFormat::Text => Err(format!("{column} came in the text format")),
        }
    }
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
