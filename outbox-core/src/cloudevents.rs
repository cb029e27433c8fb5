//! The envelope as CloudEvents binary-mode attributes.
//!
//! Transports carry the payload as the message body and every other field
//! as a string attribute, so consumers in any language can read it:
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
//! | `tidings-destination`, `tidings-correlation-id`, `tidings-causation-id`, `tidings-tenant-id`, `tidings-hlc`, `tidings-attempts` | the rest |
//!
//! Application headers travel under their own names; names starting with
//! `ce-` or `tidings-`, and `content-type`, are the envelope's
//! ([`reserved::ENVELOPE`](crate::reserved::ENVELOPE)).

use std::collections::BTreeMap;

use bytes::Bytes;
use uuid::Uuid;

use crate::Hlc;
use crate::envelope::{Envelope, Headers, truncate_to_micros};

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
const DESTINATION: &str = "tidings-destination";
const CORRELATION: &str = "tidings-correlation-id";
const CAUSATION: &str = "tidings-causation-id";
const TENANT: &str = "tidings-tenant-id";
const HLC: &str = "tidings-hlc";
const ATTEMPTS: &str = "tidings-attempts";

/// An attribute map that does not describe a valid envelope.
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
    attrs
}

/// Rebuilds an envelope from binary-mode attributes and the message body.
///
/// Attribute names are matched case-insensitively; attributes that are not
/// the envelope's own become headers.
pub fn from_attributes<'a, I>(attributes: I, payload: Bytes) -> Result<Envelope, AttributeError>
where
    I: IntoIterator<Item = (&'a str, &'a str)>,
{
    let mut own: BTreeMap<String, &str> = BTreeMap::new();
    let mut headers = Headers::new();
    for (name, value) in attributes {
        if is_reserved(name) {
            own.insert(name.to_ascii_lowercase(), value);
        } else {
            headers.insert(name.to_owned(), value.to_owned());
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
    let id = require(ID)?;
    let event_id = Uuid::parse_str(id).map_err(|e| invalid(ID, id, e.to_string()))?;
    let time = require(TIME)?;
    let occurred_at = humantime::parse_rfc3339_weak(time)
        .map(truncate_to_micros)
        .map_err(|e| invalid(TIME, time, e.to_string()))?;
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
    let owned = |name| get(name).map(str::to_owned);
    Ok(Envelope {
        event_id,
        event_type: require(TYPE)?.to_owned(),
        route: require(SOURCE)?.to_owned(),
        destination: owned(DESTINATION).unwrap_or_default(),
        payload,
        content_type: owned(CONTENT_TYPE)
            .unwrap_or_else(|| crate::codec::RAW_CONTENT_TYPE.to_owned()),
        headers,
        ordering_key: owned(PARTITION_KEY),
        correlation_id: owned(CORRELATION),
        causation_id: owned(CAUSATION),
        tenant_id: owned(TENANT),
        occurred_at,
        hlc,
        attempts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full_envelope() -> Envelope {
        let mut env = Envelope::new(
            "order-events",
            "orders",
            "order.placed",
            Bytes::from_static(b"{\"id\":1}"),
            "application/json",
        );
        env.headers
            .insert("traceparent".into(), "00-abc-def-01".into());
        env.headers.insert("x-custom".into(), "v".into());
        env.ordering_key = Some("order-1".into());
        env.correlation_id = Some("corr".into());
        env.causation_id = Some("cause".into());
        env.tenant_id = Some("tenant-9".into());
        env.hlc = Some(Hlc::from_u64(123_456));
        env.attempts = 3;
        env
    }

    fn round_trip(env: &Envelope) -> Envelope {
        let attrs = to_attributes(env);
        from_attributes(
            attrs.iter().map(|(k, v)| (k.as_str(), v.as_str())),
            env.payload.clone(),
        )
        .unwrap()
    }

    #[test]
    fn full_envelope_round_trips_exactly() {
        let env = full_envelope();
        assert_eq!(round_trip(&env), env);
    }

    #[test]
    fn minimal_envelope_round_trips_exactly() {
        let env = Envelope::new("r", "d", "t", Bytes::new(), "text/plain");
        assert_eq!(round_trip(&env), env);
    }

    #[test]
    fn attributes_use_cloudevents_names() {
        let attrs = to_attributes(&full_envelope());
        assert_eq!(attrs["ce-specversion"], "1.0");
        assert_eq!(attrs["ce-type"], "order.placed");
        assert_eq!(attrs["ce-source"], "order-events");
        assert_eq!(attrs["ce-partitionkey"], "order-1");
        assert_eq!(attrs["traceparent"], "00-abc-def-01");
        assert!(attrs["ce-time"].ends_with('Z'));
    }

    #[test]
    fn reserved_headers_do_not_override_fields() {
        let mut env = full_envelope();
        env.headers.insert("ce-id".into(), "forged".into());
        let attrs = to_attributes(&env);
        assert_eq!(attrs["ce-id"], env.event_id.to_string());
    }

    #[test]
    fn missing_and_invalid_attributes_are_reported() {
        let attrs = to_attributes(&full_envelope());
        let without = |skip: &str| {
            let pairs = attrs
                .iter()
                .filter(|(k, _)| k.as_str() != skip)
                .map(|(k, v)| (k.as_str(), v.as_str()));
            from_attributes(pairs, Bytes::new())
        };
        assert_eq!(
            without("ce-id").unwrap_err(),
            AttributeError::Missing("ce-id")
        );
        assert_eq!(
            without("ce-type").unwrap_err(),
            AttributeError::Missing("ce-type")
        );

        let mut bad = attrs.clone();
        bad.insert("ce-id".into(), "not-a-uuid".into());
        let err = from_attributes(
            bad.iter().map(|(k, v)| (k.as_str(), v.as_str())),
            Bytes::new(),
        )
        .unwrap_err();
        assert!(matches!(err, AttributeError::Invalid { name: "ce-id", .. }));
    }
}
