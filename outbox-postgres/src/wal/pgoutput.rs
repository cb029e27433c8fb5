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
    let mut by_name: HashMap<&str, Option<Bytes>> = relation
        .columns
        .iter()
        .map(String::as_str)
        .zip(values)
        .collect();
    let mut take = |name: &str| by_name.remove(name).flatten();
    let id = int8(take("id"), "id")?;
    let event_id = take("event_id").ok_or_else(|| missing("event_id"))?;
    let event_id =
        Uuid::from_slice(&event_id).map_err(|_| ChangeError("event_id is not a uuid".into()))?;
    let route = text(take("route"), "route")?;
    let destination = text(take("destination"), "destination")?;
    let event_type = text(take("event_type"), "event_type")?;
    let payload = take("payload").ok_or_else(|| missing("payload"))?;
    let content_type = text(take("content_type"), "content_type")?;
    let headers = headers(take("headers"))?;
    let ordering_key = optional(take("ordering_key"), "ordering_key")?;
    let correlation_id = optional(take("correlation_id"), "correlation_id")?;
    let causation_id = optional(take("causation_id"), "causation_id")?;
    let tenant_id = optional(take("tenant_id"), "tenant_id")?;
    let occurred_at = timestamp(take("occurred_at"), "occurred_at")?;
    let hlc = match take("hlc") {
        Some(value) => Some(Hlc::from_u64(int8(Some(value), "hlc")? as u64)),
        None => None,
    };
    let expires_at = match take("expires_at") {
        Some(value) => Some(timestamp(Some(value), "expires_at")?),
        None => None,
    };
    let available_at = timestamp(take("available_at"), "available_at")?;
    let created_at = timestamp(take("created_at"), "created_at")?;
    let delay = available_at.duration_since(created_at).unwrap_or_default();
    let envelope = Envelope {
        event_id,
        event_type,
        route,
        destination,
        payload,
        content_type,
        headers,
        ordering_key,
        correlation_id,
        causation_id,
        tenant_id,
        occurred_at,
        hlc,
        expires_at,
        attempts: 0,
    };
    Ok(OutboxRow {
        id,
        envelope,
        delay,
    })
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
