//! The two pgoutput messages table mode reads: a relation's description
//! and an insert into it, with values in binary format; and the outbox row
//! an insert carries.
//!
//! The replication client parses a transaction's bounds and logical
//! decoding messages; the changes come as raw pgoutput, which only table
//! mode needs, and only these two messages of it.

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use tidings_core::{Envelope, Headers, Hlc};
use uuid::Uuid;

use crate::columns::{self, EventColumns};

/// A change the relay cannot read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unreadable change: {0}")]
pub(crate) struct ChangeError(pub(crate) String);

/// A relation as pgoutput describes it before its first change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Relation {
    pub(crate) schema: String,
    pub(crate) table: String,
    pub(crate) columns: Vec<String>,
}

/// A decoded change.
#[derive(Debug)]
pub(crate) enum Change {
    /// A relation described.
    Relation,
    /// A row inserted into relation `relation`: each column's value, `None`
    /// for NULL.
    Insert {
        relation: u32,
        values: Vec<Option<Bytes>>,
    },
    /// Anything else (origins, types, truncates): nothing for the relay.
    Other,
}

/// The relations described so far on one stream.
#[derive(Debug, Default)]
pub(crate) struct Relations(HashMap<u32, Relation>);

impl Relations {
    /// The relation `id`, where described.
    pub(crate) fn get(&self, id: u32) -> Option<&Relation> {
        self.0.get(&id)
    }

    /// Decodes one pgoutput message, remembering relations it describes.
    pub(crate) fn decode(&mut self, data: &Bytes) -> Result<Change, ChangeError> {
        let mut r = Cursor { buf: data, at: 0 };
        match r.byte()? {
            b'R' => {
                let id = r.u32()?;
                let schema = r.cstr()?;
                let table = r.cstr()?;
                let _identity = r.byte()?;
                let count = r.u16()?;
                let mut columns = Vec::with_capacity(count.into());
                for _ in 0..count {
                    let _flags = r.byte()?;
                    columns.push(r.cstr()?);
                    let _type = r.u32()?;
                    let _modifier = r.u32()?;
                }
                self.0.insert(
                    id,
                    Relation {
                        schema,
                        table,
                        columns,
                    },
                );
                Ok(Change::Relation)
            }
            b'I' => {
                let relation = r.u32()?;
                if r.byte()? != b'N' {
                    return Err(ChangeError("an insert without a new tuple".into()));
                }
                let count = r.u16()?;
                let mut values = Vec::with_capacity(count.into());
                for _ in 0..count {
                    values.push(match r.byte()? {
                        b'n' | b'u' => None,
                        b't' | b'b' => {
                            let len = r.u32()? as usize;
                            Some(r.take(len)?)
                        }
                        kind => {
                            return Err(ChangeError(format!("unknown column kind {kind:#x}")));
                        }
                    });
                }
                Ok(Change::Insert { relation, values })
            }
            _ => Ok(Change::Other),
        }
    }
}

/// An outbox row read from an insert: its id, its event and how long it
/// waits before its first publish (its `available_at` past its
/// `created_at`, both the server's clock).
#[derive(Debug)]
pub(crate) struct OutboxRow {
    pub(crate) id: i64,
    pub(crate) envelope: Envelope,
    pub(crate) delay: Duration,
}

/// Reads an outbox row from an insert's binary values, by column name.
pub(crate) fn outbox_row(
    relation: &Relation,
    values: Vec<Option<Bytes>>,
) -> Result<OutboxRow, ChangeError> {
    let mut columns = InsertColumns(
        relation
            .columns
            .iter()
            .map(String::as_str)
            .zip(values)
            .collect(),
    );
    let id = int8(columns.take("id"), "id")?;
    let event_id = columns
        .take("event_id")
        .ok_or_else(|| missing("event_id"))?;
    let event_id =
        Uuid::from_slice(&event_id).map_err(|_| ChangeError("event_id is not a uuid".into()))?;
    let envelope = columns::envelope(&mut columns, event_id)?;
    let available_at = timestamp(columns.take("available_at"), "available_at")?;
    let created_at = timestamp(columns.take("created_at"), "created_at")?;
    let delay = available_at.duration_since(created_at).unwrap_or_default();
    Ok(OutboxRow {
        id,
        envelope,
        delay,
    })
}

/// An insert's values by column name, each taken once.
struct InsertColumns<'a>(HashMap<&'a str, Option<Bytes>>);

impl InsertColumns<'_> {
    /// The column's value, `None` where it is NULL or missing.
    fn take(&mut self, column: &str) -> Option<Bytes> {
        self.0.remove(column).flatten()
    }
}

impl EventColumns for InsertColumns<'_> {
    type Error = ChangeError;

    fn text(&mut self, column: &'static str) -> Result<String, ChangeError> {
        text(self.take(column), column)
    }

    fn optional(&mut self, column: &'static str) -> Result<Option<String>, ChangeError> {
        optional(self.take(column), column)
    }

    fn payload(&mut self) -> Result<Bytes, ChangeError> {
        self.take("payload").ok_or_else(|| missing("payload"))
    }

    fn headers(&mut self) -> Result<Headers, ChangeError> {
        headers(self.take("headers"))
    }

    fn occurred_at(&mut self) -> Result<SystemTime, ChangeError> {
        timestamp(self.take("occurred_at"), "occurred_at")
    }

    fn hlc(&mut self) -> Result<Option<Hlc>, ChangeError> {
        let hlc = self.take("hlc").map(|value| int8(Some(value), "hlc"));
        Ok(hlc.transpose()?.map(|h| Hlc::from_u64(h as u64)))
    }

    fn expires_at(&mut self) -> Result<Option<SystemTime>, ChangeError> {
        self.take("expires_at")
            .map(|value| timestamp(Some(value), "expires_at"))
            .transpose()
    }
}

fn missing(column: &str) -> ChangeError {
    ChangeError(format!("column {column} is missing or null"))
}

fn int8(value: Option<Bytes>, column: &str) -> Result<i64, ChangeError> {
    let value = value.ok_or_else(|| missing(column))?;
    let bytes: [u8; 8] = value[..]
        .try_into()
        .map_err(|_| ChangeError(format!("column {column} is not a bigint")))?;
    Ok(i64::from_be_bytes(bytes))
}

fn text(value: Option<Bytes>, column: &str) -> Result<String, ChangeError> {
    optional(value, column)?.ok_or_else(|| missing(column))
}

fn optional(value: Option<Bytes>, column: &str) -> Result<Option<String>, ChangeError> {
    value
        .map(|v| {
            String::from_utf8(v.to_vec())
                .map_err(|_| ChangeError(format!("column {column} is not UTF-8")))
        })
        .transpose()
}

/// A `timestamptz` in binary: microseconds since 2000-01-01 UTC.
fn timestamp(value: Option<Bytes>, column: &str) -> Result<SystemTime, ChangeError> {
    const POSTGRES_EPOCH: Duration = Duration::from_secs(946_684_800);
    let micros = int8(value, column)?;
    let since_2000 = Duration::from_micros(micros.unsigned_abs());
    let at = match micros >= 0 {
        true => UNIX_EPOCH + POSTGRES_EPOCH + since_2000,
        false => (UNIX_EPOCH + POSTGRES_EPOCH)
            .checked_sub(since_2000)
            .unwrap_or(UNIX_EPOCH),
    };
    Ok(at)
}

/// A `jsonb` object of strings in binary: a version byte, then JSON text.
fn headers(value: Option<Bytes>) -> Result<Headers, ChangeError> {
    let Some(value) = value else {
        return Ok(Headers::new());
    };
    let json = match value.split_first() {
        Some((1, json)) => json,
        _ => return Err(ChangeError("headers are not jsonb of version 1".into())),
    };
    serde_json::from_slice(json)
        .map_err(|err| ChangeError(format!("headers are not a JSON object of strings: {err}")))
}

struct Cursor<'a> {
    buf: &'a Bytes,
    at: usize,
}

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Result<Bytes, ChangeError> {
        let end = self.at.checked_add(n).filter(|&end| end <= self.buf.len());
        let end = end.ok_or_else(|| ChangeError("a message ends early".into()))?;
        let value = self.buf.slice(self.at..end);
        self.at = end;
        Ok(value)
    }

    fn byte(&mut self) -> Result<u8, ChangeError> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<u16, ChangeError> {
        let bytes = self.take(2)?;
        Ok(u16::from_be_bytes([bytes[0], bytes[1]]))
    }

    fn u32(&mut self) -> Result<u32, ChangeError> {
        let bytes = self.take(4)?;
        Ok(u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    }

    fn cstr(&mut self) -> Result<String, ChangeError> {
        let rest = &self.buf[self.at..];
        let len = rest
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| ChangeError("a name is not terminated".into()))?;
        let name = String::from_utf8(rest[..len].to_vec())
            .map_err(|_| ChangeError("a name is not UTF-8".into()))?;
        self.at += len + 1;
        Ok(name)
    }
}

#[cfg(test)]
mod tests;
