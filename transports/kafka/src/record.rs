//! The envelope as a Kafka record's headers, and back.
//!
//! The payload is the record's value; the ordering key, when there is one,
//! its key, so the records of one key go to one partition in order. The
//! headers are the envelope's CloudEvents attributes under the Kafka
//! protocol binding's names (`ce_id`, `ce_type`, `ce_source`, `ce_time`,
//! `ce_specversion`, `ce_partitionkey`, `content-type`), its `tidings-*`
//! extensions and the application headers.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use rdkafka::Message;
use rdkafka::message::{BorrowedMessage, Header, Headers, OwnedHeaders};
use tidings_core::cloudevents::{AttributeError, from_message, to_attributes};
use tidings_core::{
    Envelope, FIRST_FAILURE_HEADER, PublishError, REPLAYED_REASON_HEADER, reserved,
};

pub use tidings_core::{DEAD_LETTER_REASON_HEADER, PRIOR_DELIVERIES_HEADER};
/// The header of a retry record saying when it is due, in milliseconds
/// since the Unix epoch.
pub const RETRY_AT_HEADER: &str = "x-tidings-retry-at";
/// The header of a dead-lettered record naming where it was read:
/// `topic/partition/offset`.
pub const ORIGIN_HEADER: &str = "x-tidings-origin";

/// A record as received, kept whole so it can be republished unchanged.
#[derive(Debug, Clone)]
pub(crate) struct Record {
    pub(crate) topic: String,
    pub(crate) partition: i32,
    pub(crate) offset: i64,
    pub(crate) key: Option<Vec<u8>>,
    pub(crate) payload: Bytes,
    pub(crate) headers: Vec<(String, Option<Vec<u8>>)>,
}

/// What the transport's own headers say about a record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Control {
    /// Deliveries before this record was written.
    pub(crate) prior_deliveries: u32,
    /// When a retry record is due.
    pub(crate) retry_at: Option<SystemTime>,
    /// When its first delivery failed, in milliseconds since the Unix
    /// epoch, once one has.
    pub(crate) first_failure: Option<u64>,
}

impl Record {
    /// Copies a received record.
    pub(crate) fn from_message(message: &BorrowedMessage<'_>) -> Self {
        let headers = message
            .headers()
            .map(|headers| {
                headers
                    .iter()
                    .map(|h| (h.key.to_owned(), h.value.map(<[u8]>::to_vec)))
                    .collect()
            })
            .unwrap_or_default();
        Self {
            topic: message.topic().to_owned(),
            partition: message.partition(),
            offset: message.offset(),
            key: message.key().map(<[u8]>::to_vec),
            payload: Bytes::copy_from_slice(message.payload().unwrap_or_default()),
            headers,
        }
    }

    /// The value of the transport's header `name`, if readable.
    fn control(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .and_then(|(_, v)| std::str::from_utf8(v.as_deref()?).ok())
    }

    /// The transport's headers of the record.
    pub(crate) fn control_headers(&self) -> Control {
        let number = |name| self.control(name).and_then(|v| v.parse::<u64>().ok());
        Control {
            prior_deliveries: number(PRIOR_DELIVERIES_HEADER)
                .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX)),
            retry_at: number(RETRY_AT_HEADER).map(|ms| UNIX_EPOCH + Duration::from_millis(ms)),
            first_failure: number(FIRST_FAILURE_HEADER),
        }
    }

    /// The envelope the record carries, its transport headers left out.
    pub(crate) fn envelope(&self) -> Result<Envelope, AttributeError> {
        let mut attributes = Vec::with_capacity(self.headers.len());
        for (name, value) in &self.headers {
            if is_control(name) {
                continue;
            }
            let value = value.as_deref().unwrap_or_default();
            let text = std::str::from_utf8(value).map_err(|e| AttributeError::Invalid {
                name: "header",
                value: format!("{name}: {}", String::from_utf8_lossy(value)),
                reason: e.to_string(),
            })?;
            attributes.push((name.as_str(), text));
        }
        from_message(attributes, self.payload.clone())
    }

    /// The record's headers without the transport's own and those named in
    /// `extra`, with `extra` added: what a republished copy carries.
    pub(crate) fn headers_with(&self, extra: &[(&str, String)]) -> OwnedHeaders {
        let mut headers = OwnedHeaders::new_with_capacity(self.headers.len() + extra.len());
        let replaced = |name: &str| extra.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
        for (name, value) in &self.headers {
            if !is_control(name) && !replaced(name) {
                headers = headers.insert(Header {
                    key: name,
                    value: value.as_deref(),
                });
            }
        }
        for (name, value) in extra {
            headers = headers.insert(Header {
                key: name,
                value: Some(value.as_bytes()),
            });
        }
        headers
    }
}

/// Whether `name` is one of the headers the transport writes for itself
/// (retry and parking bookkeeping), which never reach the envelope. The
/// reason a replayed dead letter was parked for is the exception: the
/// handler reads it, and retries of the copy carry it along.
fn is_control(name: &str) -> bool {
    const PREFIX: &[u8] = b"x-tidings-";
    let bytes = name.as_bytes();
    bytes.len() >= PREFIX.len()
        && bytes[..PREFIX.len()].eq_ignore_ascii_case(PREFIX)
        && !name.eq_ignore_ascii_case(REPLAYED_REASON_HEADER)
}

/// Milliseconds since the Unix epoch, as a header value.
pub(crate) fn unix_millis(at: SystemTime) -> String {
    at.duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis()
        .to_string()
}

/// The headers of `envelope`, or why it cannot be sent.
pub(crate) fn encode(envelope: &Envelope) -> Result<OwnedHeaders, PublishError> {
    // Staging refuses these names already; this catches events that reached
    // the store some other way. Kafka itself interprets no header name.
    reserved::check(
        envelope.headers.keys(),
        &[&reserved::ENVELOPE, &reserved::CONSUMER],
    )
    .map_err(|reason| PublishError::Invalid { reason })?;
    let attributes = to_attributes(envelope);
    let mut headers = OwnedHeaders::new_with_capacity(attributes.len());
    for (name, value) in &attributes {
        let name = match name.strip_prefix("ce-") {
            Some(rest) => format!("ce_{rest}"),
            None => name.clone(),
        };
        headers = headers.insert(Header {
            key: &name,
            value: Some(value.as_bytes()),
        });
    }
    Ok(headers)
}

/// The bytes a record of `envelope` takes on the wire, roughly: value, key
/// and headers.
pub(crate) fn encoded_size(envelope: &Envelope, headers: &OwnedHeaders) -> usize {
    let header_bytes: usize = headers
        .iter()
        .map(|h| h.key.len() + h.value.map_or(0, <[u8]>::len) + 4)
        .sum();
    envelope.payload.len() + envelope.ordering_key.as_ref().map_or(0, String::len) + header_bytes
}

#[cfg(test)]
mod tests;
