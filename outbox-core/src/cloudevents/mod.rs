//! The envelope as CloudEvents attributes.
//!
//! Transports carry the payload as the message body and every other field
//! as a string attribute in binary mode, so consumers in any language can
//! read it:
//!
//! | attribute | field |
//! |---|---|
//! | `ce-specversion` | always `1.0` |
//! | `ce-id` | `event_id` |
//! | `ce-type` | `event_type` |
//! | `ce-source` | `route` |
//! | `ce-time` | `occurred_at`, RFC 3339 with microseconds |
//! | `ce-partitionkey` | `ordering_key` (the CloudEvents partitioning extension) |
//! | `content-type` | `content_type` |
//! | `tidings-expires-at` | `expires_at`, RFC 3339 with microseconds, where the event has one |
//! | `tidings-destination`, `tidings-correlation-id`, `tidings-causation-id`, `tidings-tenant-id`, `tidings-hlc`, `tidings-attempts` | the rest |
//! | `traceparent`, `tracestate` | the W3C trace context headers, as the CloudEvents distributed-tracing extension names them ([`telemetry`](crate::telemetry)) |
//!
//! Application headers travel under their own names; names starting with
//! `ce-` or `tidings-`, and `content-type`, are the envelope's
//! ([`reserved::ENVELOPE`](crate::reserved::ENVELOPE)).
//!
//! # Events of other producers
//!
//! [`from_message`] also reads what other CloudEvents producers send, so a
//! tidings consumer can take their events:
//!
//! - attributes under any binding's prefix: `ce-` (HTTP), `ce_` (Kafka),
//!   `cloudEvents_` or `cloudEvents:` (AMQP), in any case;
//! - structured mode: a JSON event as the body, with the content type
//!   [`STRUCTURED_CONTENT_TYPE`] or, where no attribute says otherwise, a
//!   body that is a JSON object with a `specversion`;
//! - `time` is optional (the time of reading stands in) and may carry any
//!   RFC 3339 offset;
//! - an `id` that is not a UUID maps to a UUIDv5 of the source and the id
//!   ([`event_id_for`]), so the inbox still dedupes redeliveries, and the
//!   original stays in the `ce-id` header;
//! - extensions tidings does not know (`subject`, `dataschema`, any other)
//!   become headers named `ce-<name>`; `traceparent` and `tracestate`
//!   become the headers of those names.
//!
//! Events of tidings' own producers round-trip exactly.
//!
//! ```
//! use bytes::Bytes;
//! use tidings_core::cloudevents::from_message;
//!
//! let attributes = [
//!     ("cloudEvents:specversion", "1.0"),
//!     ("cloudEvents:id", "order-17"),
//!     ("cloudEvents:source", "/shop/orders"),
//!     ("cloudEvents:type", "order.placed"),
//!     ("cloudEvents:time", "2026-11-25T14:00:00+02:00"),
//!     ("content-type", "application/json"),
//! ];
//! let envelope = from_message(attributes, Bytes::from_static(b"{}")).unwrap();
//! assert_eq!(envelope.route, "/shop/orders");
//! assert_eq!(envelope.headers["ce-id"], "order-17");
//! ```

mod foreign;
mod names;
mod structured;

use std::collections::BTreeMap;

use bytes::Bytes;
use uuid::Uuid;

use crate::Hlc;
use crate::clock::truncate_to_micros;
use crate::envelope::{Envelope, Headers};

pub use foreign::event_id_for;
pub use structured::{STRUCTURED_CONTENT_TYPE, from_structured, is_structured};

/// The CloudEvents version written and accepted.
pub const SPEC_VERSION: &str = "1.0";
/// The attribute carrying the payload's MIME type.
pub const CONTENT_TYPE: &str = "content-type";

const ID: &str = "ce-id";
const TYPE: &str = "ce-type";
const SOURCE: &str = "ce-source";
const TIME: &str = "ce-time";
const SPECVERSION: &str = "ce-specversion";
const PARTITION_KEY: &str = "ce-partitionkey";
const DATA_CONTENT_TYPE: &str = "ce-datacontenttype";
const DESTINATION: &str = "tidings-destination";
const CORRELATION: &str = "tidings-correlation-id";
const CAUSATION: &str = "tidings-causation-id";
const TENANT: &str = "tidings-tenant-id";
const HLC: &str = "tidings-hlc";
const ATTEMPTS: &str = "tidings-attempts";
const EXPIRES_AT: &str = "tidings-expires-at";

/// The envelope's own attributes, which never become headers.
const KNOWN: [&str; 15] = [
    ID,
    TYPE,
    SOURCE,
    TIME,
    SPECVERSION,
    PARTITION_KEY,
    DATA_CONTENT_TYPE,
    CONTENT_TYPE,
    DESTINATION,
    CORRELATION,
    CAUSATION,
    TENANT,
    HLC,
    ATTEMPTS,
    EXPIRES_AT,
];

/// An attribute map or body that does not describe a valid envelope.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AttributeError {
    /// A required attribute is absent.
    #[error("attribute {0} is missing")]
    Missing(&'static str),
    /// An attribute's value does not parse.
    #[error("attribute {name} has an invalid value {value:?}: {reason}")]
    Invalid {
        /// The attribute.
        name: &'static str,
        /// Its value.
        value: String,
        /// Why it is invalid.
        reason: String,
    },
    /// A structured-mode body that is not a CloudEvents JSON object.
    #[error("structured event is not a cloudevents json object: {0}")]
    Structured(String),
}

/// Whether a header name is reserved for the envelope's own attributes.
pub fn is_reserved(name: &str) -> bool {
    crate::reserved::ENVELOPE.reserves(name)
}

/// Every field but the payload, as binary-mode attributes.
pub fn to_attributes(envelope: &Envelope) -> BTreeMap<String, String> {
    let mut attrs: BTreeMap<String, String> = envelope
        .headers
        .iter()
        .filter(|(name, _)| !is_reserved(name))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut put = |name: &str, value: String| {
        attrs.insert(name.to_owned(), value);
    };
    put(SPECVERSION, SPEC_VERSION.to_owned());
    put(ID, envelope.event_id.to_string());
    put(TYPE, envelope.event_type.clone());
    put(SOURCE, envelope.route.clone());
    put(
        TIME,
        humantime::format_rfc3339_micros(envelope.occurred_at).to_string(),
    );
    put(CONTENT_TYPE, envelope.content_type.clone());
    put(DESTINATION, envelope.destination.clone());
    put(ATTEMPTS, envelope.attempts.to_string());
    let optional = [
        (PARTITION_KEY, &envelope.ordering_key),
        (CORRELATION, &envelope.correlation_id),
        (CAUSATION, &envelope.causation_id),
        (TENANT, &envelope.tenant_id),
    ];
    for (name, value) in optional {
        if let Some(value) = value {
            put(name, value.clone());
        }
    }
    if let Some(hlc) = envelope.hlc {
        put(HLC, hlc.as_u64().to_string());
    }
    if let Some(at) = envelope.expires_at {
        put(EXPIRES_AT, humantime::format_rfc3339_micros(at).to_string());
    }
    attrs
}

/// Rebuilds an envelope from a message's attributes and body, in binary or
/// structured mode, whoever produced it (see the module docs).
///
/// # Errors
///
/// [`AttributeError::Missing`] when the specversion, id, source or type
/// attribute is absent; [`AttributeError::Invalid`] when one does not parse
/// (a specversion other than 1.0, an empty id, a malformed time, expiry,
/// attempts count or clock stamp); [`AttributeError::Structured`] when a
/// structured-mode body is not a CloudEvents JSON object.
pub fn from_message<'a, I>(attributes: I, payload: Bytes) -> Result<Envelope, AttributeError>
where
    I: IntoIterator<Item = (&'a str, &'a str)>,
{
    let attributes: Vec<(&str, &str)> = attributes.into_iter().collect();
    let binary = attributes
        .iter()
        .any(|(name, _)| names::is_attribute(name, "specversion"));
    let content_type = attributes
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(CONTENT_TYPE))
        .map(|(_, value)| *value);
    let structured = match content_type {
        Some(content_type) => is_structured(content_type),
        None => structured::looks_structured(&payload),
    };
    match !binary && structured {
        true => from_structured(&payload),
        false => from_attributes(attributes, payload),
    }
}

/// Rebuilds an envelope from binary-mode attributes and the message body.
///
/// Attribute names are matched case-insensitively, under any binding's
/// prefix; attributes that are not the envelope's own become headers.
///
/// # Errors
///
/// [`AttributeError::Missing`] when the specversion, id, source or type
/// attribute is absent; [`AttributeError::Invalid`] when the specversion is
/// not 1.0, the id is empty, or the time, expiry, attempts count or clock
/// stamp does not parse.
pub fn from_attributes<'a, I>(attributes: I, payload: Bytes) -> Result<Envelope, AttributeError>
where
    I: IntoIterator<Item = (&'a str, &'a str)>,
{
    let mut own: BTreeMap<String, &str> = BTreeMap::new();
    let mut headers = Headers::new();
    for (name, value) in attributes {
        match names::canonical(name) {
            Some(canonical) if KNOWN.contains(&canonical.as_str()) => {
                own.insert(canonical, value);
            }
            Some(canonical) => names::extension(&mut headers, canonical, value),
            None => {
                headers.insert(name.to_owned(), value.to_owned());
            }
        }
    }
    let get = |name: &'static str| own.get(name).copied();
    let require = |name: &'static str| get(name).ok_or(AttributeError::Missing(name));
    let invalid = |name: &'static str, value: &str, reason: String| AttributeError::Invalid {
        name,
        value: value.to_owned(),
        reason,
    };

    let version = require(SPECVERSION)?;
    if version != SPEC_VERSION {
        return Err(invalid(
            SPECVERSION,
            version,
            format!("expected {SPEC_VERSION}"),
        ));
    }
    let source = require(SOURCE)?;
    let id = require(ID)?;
    if id.is_empty() {
        return Err(invalid(ID, id, "the id is empty".to_owned()));
    }
    let event_id = match Uuid::parse_str(id) {
        Ok(uuid) => uuid,
        Err(_) => {
            headers.insert(ID.to_owned(), id.to_owned());
            event_id_for(source, id)
        }
    };
    let occurred_at = match get(TIME) {
        Some(time) => foreign::parse_time(time).map_err(|reason| invalid(TIME, time, reason))?,
        None => truncate_to_micros(std::time::SystemTime::now()),
    };
    let attempts = match get(ATTEMPTS) {
        Some(v) => v
            .parse()
            .map_err(|e| invalid(ATTEMPTS, v, format!("{e}")))?,
        None => 0,
    };
    let hlc = match get(HLC) {
        Some(v) => Some(Hlc::from_u64(
            v.parse().map_err(|e| invalid(HLC, v, format!("{e}")))?,
        )),
        None => None,
    };
    let expires_at = match get(EXPIRES_AT) {
        Some(at) => {
            Some(foreign::parse_time(at).map_err(|reason| invalid(EXPIRES_AT, at, reason))?)
        }
        None => None,
    };
    let owned = |name| get(name).map(str::to_owned);
    Ok(Envelope {
        event_id,
        event_type: require(TYPE)?.to_owned(),
        route: source.to_owned(),
        destination: owned(DESTINATION).unwrap_or_default(),
        payload,
        content_type: owned(CONTENT_TYPE)
            .or_else(|| owned(DATA_CONTENT_TYPE))
            .unwrap_or_else(|| crate::codec::RAW_CONTENT_TYPE.to_owned()),
        headers,
        ordering_key: owned(PARTITION_KEY),
        correlation_id: owned(CORRELATION),
        causation_id: owned(CAUSATION),
        tenant_id: owned(TENANT),
        occurred_at,
        hlc,
        expires_at,
        attempts,
    })
}

#[cfg(test)]
mod tests;
