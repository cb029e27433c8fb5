//! Dead letters as AMQP messages: read for the operator, and the
//! properties of a replayed copy.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tidings_rabbitmq::lapin::BasicProperties;
use tidings_rabbitmq::lapin::message::BasicGetMessage;
use tidings_rabbitmq::lapin::types::{AMQPValue, FieldTable, LongString};

use super::{DeadLetter, REPLAYED_REASON_HEADER, is_bookkeeping};

/// The properties of the replayed copy: the dead letter's, with a fresh
/// delivery count and the parking reason under [`REPLAYED_REASON_HEADER`].
pub(super) fn replay_properties(original: &BasicProperties) -> BasicProperties {
    let mut headers = FieldTable::default();
    let old = original.headers().as_ref().map(|t| t.inner());
    for (name, value) in old.into_iter().flatten() {
        if !is_bookkeeping(name.as_str()) {
            headers.insert(name.clone(), value.clone());
        }
    }
    let reason = old
        .and_then(|t| t.get(tidings_core::DEAD_LETTER_REASON_HEADER))
        .and_then(text)
        .or_else(|| first_death_reason(original));
    if let Some(reason) = reason {
        headers.insert(
            REPLAYED_REASON_HEADER.into(),
            AMQPValue::LongString(LongString::from(reason)),
        );
    }
    original.clone().with_headers(headers)
}

/// The properties of a copy put back in the dead-letter queue: everything
/// the message carries but the broker's count of its deliveries, which the
/// copy starts without.
pub(super) fn keep_properties(original: &BasicProperties) -> BasicProperties {
    let mut headers = FieldTable::default();
    let old = original.headers().as_ref().map(|t| t.inner());
    for (name, value) in old.into_iter().flatten() {
        if name.as_str() != BROKER_DELIVERY_COUNT {
            headers.insert(name.clone(), value.clone());
        }
    }
    original.clone().with_headers(headers)
}

/// The header a quorum queue counts a message's failed deliveries in.
const BROKER_DELIVERY_COUNT: &str = "x-delivery-count";

/// The broker's reason for a message it dead-lettered on a reject.
fn first_death_reason(properties: &BasicProperties) -> Option<String> {
    let headers = properties.headers().as_ref()?;
    headers.inner().get("x-first-death-reason").and_then(text)
}

/// A dead letter as the operator sees it.
pub(super) fn read(got: &BasicGetMessage) -> DeadLetter {
    let properties = &got.delivery.properties;
    let headers: BTreeMap<String, String> = properties
        .headers()
        .as_ref()
        .map(|t| t.inner())
        .into_iter()
        .flatten()
        .filter_map(|(name, value)| Some((name.to_string(), text(value)?)))
        .collect();
    let id = properties
        .message_id()
        .as_ref()
        .map(|id| id.to_string())
        .unwrap_or_else(|| format!("tag-{}", got.delivery.delivery_tag));
    let mut letter = DeadLetter::new(id, headers, &got.delivery.data);
    if letter.reason.is_none() {
        letter.reason = first_death_reason(properties);
    }
    letter.read_parking_headers();
    letter.event_type = properties.kind().as_ref().map(|t| t.to_string());
    letter.age_secs = properties.timestamp().map(|sent| {
        let sent = UNIX_EPOCH + Duration::from_secs(sent);
        let age = SystemTime::now().duration_since(sent).unwrap_or_default();
        age.as_secs_f64()
    });
    letter
}

/// A header value as text.
fn text(value: &AMQPValue) -> Option<String> {
    match value {
        AMQPValue::LongString(s) => Some(String::from_utf8_lossy(s.as_bytes()).into_owned()),
        AMQPValue::ShortString(s) => Some(s.to_string()),
        AMQPValue::LongLongInt(n) => Some(n.to_string()),
        AMQPValue::LongInt(n) => Some(n.to_string()),
        AMQPValue::LongUInt(n) => Some(n.to_string()),
        AMQPValue::ShortInt(n) => Some(n.to_string()),
        AMQPValue::ShortUInt(n) => Some(n.to_string()),
        AMQPValue::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}
