//! Outbox documents: a staged event written as one, a claimed one read back
//! as a record, with a clear error naming the event when a document does
//! not have the expected shape.

use std::time::SystemTime;

use bytes::Bytes;
use mongodb::bson::spec::BinarySubtype;
use mongodb::bson::{Binary, Bson, Document, doc};
use tidings_core::{Envelope, FailedRow, Headers, Hlc, OutboxRecord, StagedEvent, StoreError};
use uuid::Uuid;

use crate::schema::{field, micros, status, uuid};

/// The document a staged event is inserted as: pending, available after
/// its delay or at its not-before time, with fresh attempt counters.
pub(crate) fn staged_document(event: &StagedEvent, seq: i64, now: SystemTime) -> Document {
    let e = &event.envelope;
    let headers: Vec<Bson> = e
        .headers
        .iter()
        .map(|(name, value)| {
            Bson::Document(doc! { field::HEADER_NAME: name, field::HEADER_VALUE: value })
        })
        .collect();
    let mut d = doc! {
        field::ROUTE: &e.route,
        field::EVENT_ID: uuid(e.event_id),
        field::DESTINATION: &e.destination,
        field::EVENT_TYPE: &e.event_type,
        field::PAYLOAD: Binary { subtype: BinarySubtype::Generic, bytes: e.payload.to_vec() },
        field::CONTENT_TYPE: &e.content_type,
        field::HEADERS: headers,
        field::OCCURRED_AT: micros(e.occurred_at),
        field::SEQ: seq,
        field::STATUS: status::PENDING,
        field::AVAILABLE_AT: micros(event.delay.map_or(now, |delay| delay.available_at(now))),
        field::ATTEMPTS_STARTED: 0_i32,
        field::ATTEMPTS_FINISHED: 0_i32,
    };
    let optional = [
        (field::ORDERING_KEY, &e.ordering_key),
        (field::CORRELATION_ID, &e.correlation_id),
        (field::CAUSATION_ID, &e.causation_id),
        (field::TENANT_ID, &e.tenant_id),
    ];
    for (name, value) in optional {
        if let Some(value) = value {
            d.insert(name, value);
        }
    }
    if let Some(hlc) = e.hlc {
        // A packed stamp stays below 2^63 until the year 6429, so the signed
        // integer keeps the order.
        d.insert(field::HLC, hlc.as_u64() as i64);
    }
    if let Some(at) = e.expires_at {
        d.insert(field::EXPIRES_AT, micros(at));
    }
    d
}

/// Reads a claimed document back as a record whose envelope counts the
/// current attempt.
pub(crate) fn record(d: &Document) -> Result<OutboxRecord, StoreError> {
    let event_id = event_id(d).unwrap_or(Uuid::nil());
    read_record(d, event_id).map_err(|reason| StoreError::Corrupt { event_id, reason })
}

/// The document's event id, if it has a readable one.
pub(crate) fn event_id(d: &Document) -> Option<Uuid> {
    read_uuid(d, field::EVENT_ID).ok()
}

fn read_record(d: &Document, event_id: Uuid) -> Result<OutboxRecord, String> {
    read_uuid(d, field::EVENT_ID)?;
    let started = read_count(d, field::ATTEMPTS_STARTED)?;
    let envelope = Envelope {
        event_id,
        event_type: read_str(d, field::EVENT_TYPE)?,
        route: read_str(d, field::ROUTE)?,
        destination: read_str(d, field::DESTINATION)?,
        payload: read_bytes(d, field::PAYLOAD)?,
        content_type: read_str(d, field::CONTENT_TYPE)?,
        headers: read_headers(d)?,
        ordering_key: read_opt_str(d, field::ORDERING_KEY)?,
        correlation_id: read_opt_str(d, field::CORRELATION_ID)?,
        causation_id: read_opt_str(d, field::CAUSATION_ID)?,
        tenant_id: read_opt_str(d, field::TENANT_ID)?,
        occurred_at: crate::schema::from_micros(read_i64(d, field::OCCURRED_AT)?),
        hlc: read_opt_i64(d, field::HLC)?.map(|h| Hlc::from_u64(h as u64)),
        expires_at: read_opt_i64(d, field::EXPIRES_AT)?.map(crate::schema::from_micros),
        attempts: started,
    };
    Ok(OutboxRecord {
        envelope,
        attempts_started: started,
        attempts_finished: read_count(d, field::ATTEMPTS_FINISHED)?,
        last_error: read_opt_str(d, field::LAST_ERROR)?,
    })
}

/// Reads a failed document as an operator sees it, `now` in microseconds.
pub(crate) fn failed_row(d: &Document, now: i64) -> Result<FailedRow, StoreError> {
    let event_id = event_id(d).unwrap_or(Uuid::nil());
    read_failed_row(d, now).map_err(|reason| StoreError::Corrupt { event_id, reason })
}

fn read_failed_row(d: &Document, now: i64) -> Result<FailedRow, String> {
    let failed_at = read_opt_i64(d, field::FINISHED_AT)?.unwrap_or(now);
    Ok(FailedRow {
        event_id: read_uuid(d, field::EVENT_ID)?,
        event_type: read_str(d, field::EVENT_TYPE)?,
        destination: read_str(d, field::DESTINATION)?,
        ordering_key: read_opt_str(d, field::ORDERING_KEY)?,
        attempts: read_count(d, field::ATTEMPTS_STARTED)?,
        last_error: read_opt_str(d, field::LAST_ERROR)?,
        failed_for: crate::schema::age(now, failed_at),
        content_type: read_str(d, field::CONTENT_TYPE)?,
        payload: read_bytes(d, field::PAYLOAD)?,
    })
}

/// A field's value, `None` when absent or null.
fn get<'d>(d: &'d Document, name: &str) -> Option<&'d Bson> {
    d.get(name).filter(|v| !matches!(v, Bson::Null))
}

fn missing(name: &str) -> String {
    format!("field {name:?} is missing")
}

fn wrong(name: &str, value: &Bson, expected: &str) -> String {
    format!(
        "field {name:?} holds {:?}, expected {expected}",
        value.element_type()
    )
}

fn read_str(d: &Document, name: &str) -> Result<String, String> {
    read_opt_str(d, name)?.ok_or_else(|| missing(name))
}

fn read_opt_str(d: &Document, name: &str) -> Result<Option<String>, String> {
    match get(d, name) {
        None => Ok(None),
        Some(Bson::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(wrong(name, other, "a string")),
    }
}

fn read_i64(d: &Document, name: &str) -> Result<i64, String> {
    read_opt_i64(d, name)?.ok_or_else(|| missing(name))
}

fn read_opt_i64(d: &Document, name: &str) -> Result<Option<i64>, String> {
    match get(d, name) {
        None => Ok(None),
        Some(Bson::Int64(n)) => Ok(Some(*n)),
        Some(Bson::Int32(n)) => Ok(Some(i64::from(*n))),
        Some(other) => Err(wrong(name, other, "an integer")),
    }
}

fn read_count(d: &Document, name: &str) -> Result<u32, String> {
    let n = read_i64(d, name)?;
    u32::try_from(n).map_err(|_| format!("field {name:?} is {n}, expected a count"))
}

fn read_bytes(d: &Document, name: &str) -> Result<Bytes, String> {
    match get(d, name) {
        None => Err(missing(name)),
        Some(Bson::Binary(b)) if b.subtype == BinarySubtype::Generic => {
            Ok(Bytes::from(b.bytes.clone()))
        }
        Some(other) => Err(wrong(name, other, "generic binary data")),
    }
}

fn read_uuid(d: &Document, name: &str) -> Result<Uuid, String> {
    match get(d, name) {
        None => Err(missing(name)),
        Some(Bson::Binary(b)) if b.subtype == BinarySubtype::Uuid => {
            Uuid::from_slice(&b.bytes).map_err(|_| format!("field {name:?} is not a 16-byte UUID"))
        }
        Some(other) => Err(wrong(name, other, "a UUID")),
    }
}

fn read_headers(d: &Document) -> Result<Headers, String> {
    let name = field::HEADERS;
    let items = match get(d, name) {
        None => return Ok(Headers::new()),
        Some(Bson::Array(items)) => items,
        Some(other) => return Err(wrong(name, other, "an array")),
    };
    let mut headers = Headers::new();
    for item in items {
        let Bson::Document(pair) = item else {
            return Err(wrong(name, item, "an array of {name, value} documents"));
        };
        let key = read_str(pair, field::HEADER_NAME).map_err(|e| format!("a header's {e}"))?;
        let value = read_str(pair, field::HEADER_VALUE).map_err(|e| format!("a header's {e}"))?;
        headers.insert(key, value);
    }
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn staged() -> StagedEvent {
        let mut envelope =
            Envelope::new("r", "q", "t", Bytes::from_static(b"{}"), "application/json");
        envelope.headers.insert("a.b$c".into(), "v".into());
        envelope.ordering_key = Some("k".into());
        envelope.hlc = Some(Hlc::from_u64(7 << 16));
        envelope.expires_at = Some(tidings_core::truncate_to_micros(SystemTime::now()));
        StagedEvent {
            envelope,
            delay: Some(Duration::from_secs(1).into()),
        }
    }

    #[test]
    fn a_staged_event_reads_back_as_it_was_written() {
        let event = staged();
        let mut d = staged_document(&event, 1, SystemTime::now());
        d.insert(field::ATTEMPTS_STARTED, 1_i32);
        let record = record(&d).unwrap();
        let mut expected = event.envelope;
        expected.attempts = 1;
        assert_eq!(record.envelope, expected);
        assert_eq!((record.attempts_started, record.attempts_finished), (1, 0));
    }

    #[test]
    fn unexpected_shapes_name_the_event_and_the_field() {
        let event = staged();
        let id = event.envelope.event_id;
        let base = staged_document(&event, 1, SystemTime::now());
        let cases: [(&str, Option<Bson>, &str); 4] = [
            (field::PAYLOAD, None, "\"payload\" is missing"),
            (
                field::ATTEMPTS_STARTED,
                Some(Bson::String("1".into())),
                "expected an integer",
            ),
            (field::HEADERS, Some(Bson::Int32(1)), "expected an array"),
            (
                field::ORDERING_KEY,
                Some(Bson::Boolean(true)),
                "expected a string",
            ),
        ];
        for (name, value, says) in cases {
            let mut d = base.clone();
            match value {
                Some(v) => d.insert(name, v),
                None => d.remove(name),
            };
            let err = record(&d).unwrap_err();
            assert!(
                matches!(err, StoreError::Corrupt { event_id, .. } if event_id == id),
                "{err}"
            );
            assert!(err.to_string().contains(says), "{err}");
        }
        let mut d = base;
        d.insert(field::EVENT_ID, "not a uuid");
        assert!(
            matches!(record(&d), Err(StoreError::Corrupt { event_id, .. }) if event_id.is_nil())
        );
    }
}
