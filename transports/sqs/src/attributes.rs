//! The envelope as SQS message attributes, within SQS's limit of ten per
//! message.
//!
//! Every field but the payload becomes a CloudEvents binary-mode attribute
//! ([`tidings_core::cloudevents`]), each a `String` message attribute of its
//! own while they fit. When there are more than ten, the most useful ones
//! keep their own attribute — `ce-specversion`, `ce-id`, `ce-source`,
//! `ce-type`, `ce-time`, `content-type`, the body encoding, `traceparent`
//! and `ce-partitionkey`, in that order, then the rest by name — and the
//! remainder is packed into the one attribute [`PACKED_ATTRIBUTE`]: a JSON
//! object of name to value. Headers SQS cannot carry as attributes of their
//! own (names with characters other than `A-Za-z0-9_.-`, empty values,
//! control characters) always go into the pack.

use std::collections::{BTreeMap, HashMap};

use aws_sdk_sqs::types::MessageAttributeValue;
use tidings_core::Envelope;
use tidings_core::cloudevents::{self, AttributeError};

use crate::body::{self, BODY_ENCODING_ATTRIBUTE, BodyError, is_allowed_text};

/// The most message attributes SQS accepts on one message.
pub const MAX_MESSAGE_ATTRIBUTES: usize = 10;

/// The attribute carrying, as a JSON object of name to value, the
/// attributes that do not fit or cannot travel on their own.
pub const PACKED_ATTRIBUTE: &str = "tidings-packed";

/// Attributes that keep their own slot first, most useful first.
const PRIORITY: [&str; 9] = [
    "ce-specversion",
    "ce-id",
    "ce-source",
    "ce-type",
    "ce-time",
    "content-type",
    BODY_ENCODING_ATTRIBUTE,
    "traceparent",
    "ce-partitionkey",
];

/// SQS's data type for text attributes.
const STRING: &str = "String";

/// A message ready to send: body, attributes and its size as SQS counts it.
#[derive(Debug, Clone)]
pub(crate) struct Encoded {
    pub(crate) body: String,
    pub(crate) attributes: Vec<(String, String)>,
    pub(crate) size: usize,
}

impl Encoded {
    /// The attributes as the SDK wants them.
    pub(crate) fn sqs_attributes(&self) -> HashMap<String, MessageAttributeValue> {
        to_sqs(&self.attributes)
    }
}

/// A received message that does not form an envelope.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DecodeError {
    #[error("attribute {PACKED_ATTRIBUTE} is not a json object of strings")]
    Packed(#[source] serde_json::Error),
    #[error(transparent)]
    Body(#[from] BodyError),
    #[error(transparent)]
    Attributes(#[from] AttributeError),
}

/// The envelope as a body and at most ten attributes; `Err` with the reason
/// when SQS cannot carry it.
pub(crate) fn encode(envelope: &Envelope) -> Result<Encoded, String> {
    let (body, encoding) = body::encode(&envelope.payload);
    let mut map = cloudevents::to_attributes(envelope);
    if let Some(encoding) = encoding {
        map.insert(BODY_ENCODING_ATTRIBUTE.to_owned(), encoding.to_owned());
    }
    let attributes = pack(map, MAX_MESSAGE_ATTRIBUTES)?;
    let size = message_size(&body, &attributes);
    Ok(Encoded {
        body,
        attributes,
        size,
    })
}

/// The envelope a received message carries.
pub(crate) fn decode(
    body: &str,
    raw: Option<&HashMap<String, MessageAttributeValue>>,
) -> Result<Envelope, DecodeError> {
    let mut map = unpack(raw)?;
    let encoding = map.remove(BODY_ENCODING_ATTRIBUTE);
    let payload = body::decode(body, encoding.as_deref())?;
    let pairs = map.iter().map(|(k, v)| (k.as_str(), v.as_str()));
    Ok(cloudevents::from_message(pairs, payload)?)
}

/// At most `slots` attributes carrying every entry of `map`, packing what
/// does not fit or cannot travel alone.
pub(crate) fn pack(
    map: BTreeMap<String, String>,
    slots: usize,
) -> Result<Vec<(String, String)>, String> {
    let (mut own, forced): (Vec<_>, Vec<_>) = map
        .into_iter()
        .partition(|(name, value)| can_travel_alone(name, value));
    own.sort_by(|(a, _), (b, _)| rank(a).cmp(&rank(b)).then_with(|| a.cmp(b)));
    if forced.is_empty() && own.len() <= slots {
        return Ok(own);
    }
    if slots == 0 {
        return Err("no message attribute left to pack attributes into".to_owned());
    }
    let rest = own.split_off(own.len().min(slots - 1));
    let packed: BTreeMap<String, String> = rest.into_iter().chain(forced).collect();
    let json = serde_json::to_string(&packed).map_err(|e| e.to_string())?;
    if !is_allowed_text(&json) {
        return Err("a header value holds characters sqs cannot carry".to_owned());
    }
    own.push((PACKED_ATTRIBUTE.to_owned(), json));
    Ok(own)
}

/// Every text attribute of a received message, the pack unpacked.
pub(crate) fn unpack(
    raw: Option<&HashMap<String, MessageAttributeValue>>,
) -> Result<BTreeMap<String, String>, DecodeError> {
    let mut map = BTreeMap::new();
    let mut packed = None;
    for (name, value) in raw.into_iter().flatten() {
        let Some(text) = text_value(value) else {
            continue;
        };
        if name == PACKED_ATTRIBUTE {
            packed = Some(text);
        } else {
            map.insert(name.clone(), text.to_owned());
        }
    }
    if let Some(json) = packed {
        let entries: BTreeMap<String, String> =
            serde_json::from_str(json).map_err(DecodeError::Packed)?;
        for (name, value) in entries {
            map.entry(name).or_insert(value);
        }
    }
    Ok(map)
}

/// The value of a `String` or `Number` attribute.
pub(crate) fn text_value(value: &MessageAttributeValue) -> Option<&str> {
    let data_type = value.data_type();
    if data_type.starts_with(STRING) || data_type.starts_with("Number") {
        value.string_value()
    } else {
        None
    }
}

/// Attributes as the SDK wants them.
pub(crate) fn to_sqs(attributes: &[(String, String)]) -> HashMap<String, MessageAttributeValue> {
    attributes
        .iter()
        .filter_map(|(name, value)| {
            let value = MessageAttributeValue::builder()
                .data_type(STRING)
                .string_value(value)
                .build()
                .ok()?;
            Some((name.clone(), value))
        })
        .collect()
}

/// The size SQS counts: the body plus every attribute's name, data type
/// and value.
pub(crate) fn message_size(body: &str, attributes: &[(String, String)]) -> usize {
    let attributes: usize = attributes
        .iter()
        .map(|(name, value)| name.len() + STRING.len() + value.len())
        .sum();
    body.len() + attributes
}

fn rank(name: &str) -> usize {
    PRIORITY
        .iter()
        .position(|p| *p == name)
        .unwrap_or(PRIORITY.len())
}

fn can_travel_alone(name: &str, value: &str) -> bool {
    name != PACKED_ATTRIBUTE && is_legal_name(name) && is_allowed_text(value)
}

/// SQS's rules for message attribute names.
fn is_legal_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    (1..=256).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        && !name.starts_with('.')
        && !name.ends_with('.')
        && !name.contains("..")
        && !lower.starts_with("aws.")
        && !lower.starts_with("amazon.")
}

#[cfg(test)]
mod tests;
