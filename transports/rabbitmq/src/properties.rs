//! The envelope as AMQP properties and headers, and back.
//!
//! The AMQP properties carry what AMQP has a slot for (message id = event
//! id, type, content type, timestamp, correlation id, persistent delivery
//! mode); the header table carries the envelope's CloudEvents binary-mode
//! attributes ([`tidings_core::cloudevents`]) and application headers, so
//! every transport and every language reads the same names.

use std::borrow::Cow;
use std::time::UNIX_EPOCH;

use bytes::Bytes;
use lapin::BasicProperties;
use lapin::types::{AMQPValue, FieldTable, LongString, ShortString};
use tidings_core::cloudevents::{AttributeError, CONTENT_TYPE, from_message, to_attributes};
use tidings_core::{Envelope, PublishError};

pub use tidings_core::{DEAD_LETTER_REASON_HEADER, PRIOR_DELIVERIES_HEADER};
/// The header quorum queues count failed deliveries in.
pub(crate) const QUORUM_DELIVERY_COUNT: &str = "x-delivery-count";

/// Persistent delivery mode: the broker writes the message to disk.
const PERSISTENT: u8 = 2;
/// The frame header and end byte around a content header frame.
const FRAME_OVERHEAD: usize = 8;
/// Class id, weight, body size and property flags of a content header.
const CONTENT_HEADER_FIXED: usize = 14;

/// The properties of `envelope`, or why it cannot be sent over AMQP.
///
/// `frame_max` is the connection's negotiated frame size: AMQP carries all
/// properties in one frame, so a header table larger than that cannot be
/// sent at all.
pub(crate) fn encode(
    envelope: &Envelope,
    frame_max: usize,
) -> Result<BasicProperties, PublishError> {
    let mut headers = FieldTable::default();
    let mut size = CONTENT_HEADER_FIXED + 4;
    for (name, value) in to_attributes(envelope) {
        size += 1 + name.len() + 1 + 4 + value.len();
        let key = short("header name", &name)?;
        headers.insert(key, AMQPValue::LongString(LongString::from(value)));
    }
    let mut properties = BasicProperties::default()
        .with_message_id(short("event id", &envelope.event_id.to_string())?)
        .with_type(short("event type", &envelope.event_type)?)
        .with_content_type(short("content type", &envelope.content_type)?)
        .with_delivery_mode(PERSISTENT)
        .with_timestamp(unix_seconds(envelope));
    size += 37 + 1 + envelope.event_type.len() + 1 + envelope.content_type.len() + 1 + 8;
    if let Some(correlation) = &envelope.correlation_id {
        properties = properties.with_correlation_id(short("correlation id", correlation)?);
        size += 1 + correlation.len();
    }
    if size + FRAME_OVERHEAD > frame_max {
        return Err(PublishError::Invalid {
            reason: format!(
                "headers and properties take {size} bytes, more than the {frame_max}-byte frame AMQP must carry them in"
            ),
        });
    }
    Ok(properties.with_headers(headers))
}

/// An AMQP short string (at most 255 bytes), or the error naming the field.
pub(crate) fn short(what: &str, value: &str) -> Result<ShortString, PublishError> {
    ShortString::try_new(value).map_err(|_| PublishError::Invalid {
        reason: format!(
            "{what} {:?} is {} bytes long; AMQP allows at most 255",
            preview(value),
            value.len()
        ),
    })
}

fn preview(value: &str) -> String {
    value.chars().take(40).collect()
}

fn unix_seconds(envelope: &Envelope) -> u64 {
    envelope
        .occurred_at
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Rebuilds the envelope from a delivery's properties and body, in either
/// CloudEvents mode and from any producer; the AMQP content type stands in
/// for a missing `content-type` header, as the AMQP binding carries it.
pub(crate) fn decode(
    properties: &BasicProperties,
    payload: Bytes,
) -> Result<Envelope, AttributeError> {
    // Borrowed where the header already is text, so a delivery's headers
    // are copied once, into the envelope.
    let mut attributes: Vec<(&str, Cow<'_, str>)> = properties
        .headers()
        .iter()
        .flat_map(|table| table.inner())
        .filter(|(name, _)| !is_broker_header(name.as_str()))
        .filter_map(|(name, value)| Some((name.as_str(), text(value)?)))
        .collect();
    let has_content_type = attributes
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case(CONTENT_TYPE));
    if let (false, Some(content_type)) = (has_content_type, properties.content_type()) {
        attributes.push((CONTENT_TYPE, Cow::Borrowed(content_type.as_str())));
    }
    from_message(attributes.iter().map(|(k, v)| (*k, v.as_ref())), payload)
}

/// Headers the broker or this transport adds, which are not the
/// envelope's: a handler never sees the acker's delivery bookkeeping.
fn is_broker_header(name: &str) -> bool {
    name == "x-death"
        || name == QUORUM_DELIVERY_COUNT
        || name == PRIOR_DELIVERIES_HEADER
        || name == tidings_core::FIRST_FAILURE_HEADER
        || name == tidings_core::PARKED_AT_HEADER
        || name == tidings_core::PARKED_DELIVERIES_HEADER
        || name.starts_with("x-first-death-")
        || name.starts_with("x-last-death-")
}

/// A header value as text; tables, arrays and byte arrays have none.
pub(crate) fn text(value: &AMQPValue) -> Option<Cow<'_, str>> {
    Some(Cow::Owned(match value {
        AMQPValue::LongString(s) => {
            return std::str::from_utf8(s.as_bytes()).ok().map(Cow::Borrowed);
        }
        AMQPValue::ShortString(s) => return Some(Cow::Borrowed(s.as_str())),
        AMQPValue::Boolean(b) => b.to_string(),
        AMQPValue::ShortShortInt(n) => n.to_string(),
        AMQPValue::ShortShortUInt(n) => n.to_string(),
        AMQPValue::ShortInt(n) => n.to_string(),
        AMQPValue::ShortUInt(n) => n.to_string(),
        AMQPValue::LongInt(n) => n.to_string(),
        AMQPValue::LongUInt(n) => n.to_string(),
        AMQPValue::LongLongInt(n) => n.to_string(),
        AMQPValue::Timestamp(n) => n.to_string(),
        AMQPValue::Float(n) => n.to_string(),
        AMQPValue::Double(n) => n.to_string(),
        _ => return None,
    }))
}

/// A header value as a number.
pub(crate) fn number(value: &AMQPValue) -> Option<u64> {
    match value {
        AMQPValue::LongLongInt(n) => u64::try_from(*n).ok(),
        AMQPValue::LongInt(n) => u64::try_from(*n).ok(),
        AMQPValue::LongUInt(n) => Some(u64::from(*n)),
        AMQPValue::ShortInt(n) => u64::try_from(*n).ok(),
        AMQPValue::ShortUInt(n) => Some(u64::from(*n)),
        AMQPValue::ShortShortInt(n) => u64::try_from(*n).ok(),
        AMQPValue::ShortShortUInt(n) => Some(u64::from(*n)),
        AMQPValue::Timestamp(n) => Some(*n),
        other => text(other)?.parse().ok(),
    }
}

#[cfg(test)]
mod tests;
