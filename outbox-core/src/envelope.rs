//! The envelope: what every port moves.

use std::collections::BTreeMap;
use std::time::SystemTime;

use bytes::Bytes;
use uuid::Uuid;

use crate::Hlc;
use crate::clock::truncate_to_micros;

/// Headers carried with a message, ordered by name.
pub type Headers = BTreeMap<String, String>;

/// One event on its way from an outbox to a consumer.
///
/// The payload is bytes; typed payloads exist only where a codec encodes
/// them (staging) or decodes them (the consumer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// UUIDv7, stable across retries; consumers dedupe on it.
    pub event_id: Uuid,
    /// What happened, for example `order.placed`.
    pub event_type: String,
    /// The outbox spec the event was staged through.
    pub route: String,
    /// The queue the event is relayed to.
    pub destination: String,
    /// The encoded payload.
    pub payload: Bytes,
    /// The MIME type of the payload.
    pub content_type: String,
    /// Application headers, `traceparent` among them.
    pub headers: Headers,
    /// Events sharing a key are delivered in order where the spec asks.
    pub ordering_key: Option<String>,
    /// Correlates every event of one business flow.
    pub correlation_id: Option<String>,
    /// The event or command that caused this one.
    pub causation_id: Option<String>,
    /// The tenant the event belongs to.
    pub tenant_id: Option<String>,
    /// When the event was staged, at microsecond precision.
    pub occurred_at: SystemTime,
    /// Hybrid logical clock stamp, where the spec asks for one.
    pub hlc: Option<Hlc>,
    /// When the event stops being worth delivering, at microsecond
    /// precision: the relay fails it rather than publish it later, and a
    /// consumer parks or skips it rather than handle it later.
    pub expires_at: Option<SystemTime>,
    /// Publish attempts so far, this one included (0 before the first).
    pub attempts: u32,
}

impl Envelope {
    /// An envelope with a fresh UUIDv7 id, stamped now, and no optional
    /// fields.
    pub fn new(
        route: impl Into<String>,
        destination: impl Into<String>,
        event_type: impl Into<String>,
        payload: Bytes,
        content_type: impl Into<String>,
    ) -> Self {
        Self {
            event_id: Uuid::now_v7(),
            event_type: event_type.into(),
            route: route.into(),
            destination: destination.into(),
            payload,
            content_type: content_type.into(),
            headers: Headers::new(),
            ordering_key: None,
            correlation_id: None,
            causation_id: None,
            tenant_id: None,
            occurred_at: truncate_to_micros(SystemTime::now()),
            hlc: None,
            expires_at: None,
            attempts: 0,
        }
    }

    /// Whether the event's expiry has come by `now`.
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use tidings_core::Envelope;
    ///
    /// let mut envelope = Envelope::new("r", "q", "t", "{}".into(), "application/json");
    /// let now = SystemTime::now();
    /// assert!(!envelope.is_expired(now), "no expiry, never expired");
    /// envelope.expires_at = Some(now);
    /// assert!(envelope.is_expired(now));
    /// assert!(!envelope.is_expired(now - Duration::from_secs(1)));
    /// ```
    pub fn is_expired(&self, now: SystemTime) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }

    /// The W3C trace context header, when the producer had one.
    pub fn traceparent(&self) -> Option<&str> {
        self.headers.get("traceparent").map(String::as_str)
    }
}
