//! The staging buffer every backend's transaction context shares.
//!
//! `ctx.outbox().stage(&SPEC, "order.placed", &payload)` encodes the payload
//! with the spec's codec and buffers an envelope; options are set on the
//! returned [`Staged`]. The backend writes the buffer in one statement when
//! the context commits, and a context dropped or rolled back takes the buffer
//! with it.

use std::time::Duration;

use uuid::Uuid;

use crate::envelope::truncate_to_micros;
use crate::reserved;
use crate::{Codec, CodecError, Envelope, HybridClock, OutboxSpec, SharedClock, SpecError};

/// The longest ordering key accepted, in bytes.
pub const MAX_ORDERING_KEY_LEN: usize = 128;
/// The longest event type accepted, in bytes.
pub const MAX_EVENT_TYPE_LEN: usize = 200;
/// The longest header name accepted, in bytes.
pub const MAX_HEADER_NAME_LEN: usize = 128;
/// The longest header value accepted, in bytes: room for a W3C `baggage`
/// header at its recommended limit.
pub const MAX_HEADER_VALUE_LEN: usize = 8 * 1024;
/// The most bytes all of an event's header names and values may take
/// together, well inside the smallest space a transport carries them in
/// (an AMQP frame, SQS's message attributes).
pub const MAX_HEADERS_LEN: usize = 16 * 1024;

/// An event staged in a transaction, waiting for its commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StagedEvent {
    /// The event.
    pub envelope: Envelope,
    /// Keeps the row invisible to the relay for this long after commit.
    pub delay: Option<Duration>,
}

/// Staging that cannot be done as asked. Nothing of the transaction is
/// written when commit reports one of these.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StageError {
    /// The spec is unusable.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// The payload does not encode.
    #[error(transparent)]
    Codec(#[from] CodecError),
    /// The event type is empty, too long or holds control characters.
    #[error("event type {0:?} is invalid: use 1 to 200 printable characters")]
    EventType(String),
    /// A header name that the envelope, the consumer or a broker gives a
    /// meaning of its own ([`reserved`](crate::reserved)).
    #[error("header {name:?} is reserved: {owner} gives it a meaning, as {why}")]
    ReservedHeader {
        /// The header name as staged.
        name: String,
        /// Who reserves it.
        owner: &'static str,
        /// What it does with such names.
        why: &'static str,
    },
    /// A header name or value that transports cannot carry.
    #[error("header {name:?} is invalid: {reason}")]
    Header {
        /// The header name.
        name: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// An event's headers together are larger than [`MAX_HEADERS_LEN`].
    #[error("headers take {len} bytes; names and values together may take at most 16 KiB")]
    Headers {
        /// Their names' and values' length.
        len: usize,
    },
    /// An empty or over-long ordering key.
    #[error("ordering key {0:?} is invalid: use 1 to 128 bytes")]
    OrderingKey(String),
    /// Two staged events share an event id.
    #[error("event id {0} is staged twice in one transaction")]
    DuplicateEventId(Uuid),
}

/// Buffers staged events until the owning context commits.
#[derive(Debug)]
pub struct OutboxBuffer {
    clock: SharedClock,
    hlc: HybridClock,
    staged: Vec<StagedEvent>,
    /// Whether an event's id was chosen by the caller rather than freshly
    /// generated.
    ids_chosen: bool,
}

impl OutboxBuffer {
    /// An empty buffer stamping events with `clock` and `hlc`.
    pub fn new(clock: SharedClock, hlc: HybridClock) -> Self {
        Self {
            clock,
            hlc,
            staged: Vec::new(),
            ids_chosen: false,
        }
    }

    /// Encodes `payload` with the spec's codec and buffers an event of type
    /// `event_type`. Set options on the returned [`Staged`].
    pub fn stage<T, C: Codec<T>>(
        &mut self,
        spec: &OutboxSpec<T, C>,
        event_type: &str,
        payload: &T,
    ) -> Result<Staged<'_>, StageError> {
        spec.validate()?;
        check_event_type(event_type)?;
        let route = spec.route();
        let bytes = spec.codec().encode(payload)?;
        let mut envelope = Envelope::new(
            route.name,
            route.require_destination()?,
            event_type,
            bytes,
            spec.content_type(),
        );
        envelope.occurred_at = truncate_to_micros(self.clock.now());
        if route.hlc_ordering {
            envelope.hlc = Some(self.hlc.now());
        }
        self.staged.push(StagedEvent {
            envelope,
            delay: None,
        });
        let event = self.staged.last_mut().expect("just pushed");
        Ok(Staged {
            event,
            ids_chosen: &mut self.ids_chosen,
        })
    }

    /// Buffers an event built elsewhere, for example one forwarded from
    /// another outbox. Its options are checked at commit like any other.
    pub fn push(&mut self, event: StagedEvent) {
        self.ids_chosen = true;
        self.staged.push(event);
    }

    /// The events staged so far.
    pub fn staged(&self) -> &[StagedEvent] {
        &self.staged
    }

    /// How many events are staged.
    pub fn len(&self) -> usize {
        self.staged.len()
    }

    /// Whether nothing is staged.
    pub fn is_empty(&self) -> bool {
        self.staged.is_empty()
    }

    /// Whether any staged event carries an id the caller chose
    /// ([`Staged::event_id`], [`push`](Self::push)) rather than a fresh
    /// UUIDv7. Only such an id can already be stored, so a backend may
    /// skip its duplicate check when this is `false`.
    pub fn ids_chosen(&self) -> bool {
        self.ids_chosen
    }

    /// Checks the options set on every staged event and empties the
    /// buffer. Backends call this when committing.
    pub fn take(&mut self) -> Result<Vec<StagedEvent>, StageError> {
        for event in &self.staged {
            check_options(&event.envelope)?;
        }
        if self.staged.len() > 1 {
            let mut seen = std::collections::HashSet::with_capacity(self.staged.len());
            for event in &self.staged {
                if !seen.insert((event.envelope.route.as_str(), event.envelope.event_id)) {
                    return Err(StageError::DuplicateEventId(event.envelope.event_id));
                }
            }
        }
        self.ids_chosen = false;
        Ok(std::mem::take(&mut self.staged))
    }
}

/// Options of one staged event. Invalid options are reported when the
/// context commits.
#[derive(Debug)]
pub struct Staged<'a> {
    event: &'a mut StagedEvent,
    ids_chosen: &'a mut bool,
}

impl Staged<'_> {
    /// Uses this event id instead of a fresh UUIDv7, for idempotent
    /// staging: stores skip an event whose id they already hold for the
    /// route.
    pub fn event_id(self, id: Uuid) -> Self {
        *self.ids_chosen = true;
        self.event.envelope.event_id = id;
        self
    }

    /// Sets the ordering key (usually the aggregate id).
    pub fn ordering_key(self, key: impl Into<String>) -> Self {
        self.event.envelope.ordering_key = Some(key.into());
        self
    }

    /// Adds an application header, such as `traceparent`. It reaches the
    /// handler unchanged, under the same name.
    ///
    /// The context's commit refuses, naming the header and why:
    /// - names that the envelope, the consumer or a broker gives a meaning
    ///   of its own ([`reserved`](crate::reserved): `ce-*`, `tidings-*`,
    ///   `content-type`, `x-tidings-*`, `x-dead-letter-reason`, RabbitMQ's
    ///   `CC`, `BCC`, `x-death`, `x-delivery-count`..), in any case;
    /// - names that are empty, longer than [`MAX_HEADER_NAME_LEN`] or hold
    ///   anything but printable ASCII without `:`;
    /// - values with control characters (tab aside) or U+FFFE/U+FFFF, or
    ///   longer than [`MAX_HEADER_VALUE_LEN`];
    /// - headers of one event taking more than [`MAX_HEADERS_LEN`] together.
    pub fn header(self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.event
            .envelope
            .headers
            .insert(name.into(), value.into());
        self
    }

    /// Sets the correlation id.
    pub fn correlation_id(self, id: impl Into<String>) -> Self {
        self.event.envelope.correlation_id = Some(id.into());
        self
    }

    /// Sets the causation id.
    pub fn causation_id(self, id: impl Into<String>) -> Self {
        self.event.envelope.causation_id = Some(id.into());
        self
    }

    /// Sets the tenant id.
    pub fn tenant_id(self, id: impl Into<String>) -> Self {
        self.event.envelope.tenant_id = Some(id.into());
        self
    }

    /// Keeps the event from being relayed until `delay` after commit.
    pub fn delay(self, delay: Duration) -> Self {
        self.event.delay = Some(delay);
        self
    }

    /// The event as staged so far.
    pub fn envelope(&self) -> &Envelope {
        &self.event.envelope
    }
}

fn check_event_type(event_type: &str) -> Result<(), StageError> {
    let ok = !event_type.is_empty()
        && event_type.len() <= MAX_EVENT_TYPE_LEN
        && !event_type.chars().any(char::is_control);
    if ok {
        Ok(())
    } else {
        Err(StageError::EventType(event_type.to_owned()))
    }
}

fn check_options(envelope: &Envelope) -> Result<(), StageError> {
    if let Some(key) = &envelope.ordering_key {
        if key.is_empty() || key.len() > MAX_ORDERING_KEY_LEN {
            return Err(StageError::OrderingKey(key.clone()));
        }
    }
    let mut total = 0;
    for (name, value) in &envelope.headers {
        check_header(name, value)?;
        total += name.len() + value.len();
    }
    if total > MAX_HEADERS_LEN {
        return Err(StageError::Headers { len: total });
    }
    Ok(())
}

fn check_header(name: &str, value: &str) -> Result<(), StageError> {
    let invalid = |reason| {
        Err(StageError::Header {
            name: name.to_owned(),
            reason,
        })
    };
    if let Some(list) = reserved::owner_of(name) {
        return Err(StageError::ReservedHeader {
            name: name.to_owned(),
            owner: list.owner,
            why: list.why,
        });
    }
    if name.is_empty() || name.len() > MAX_HEADER_NAME_LEN {
        return invalid("names are 1 to 128 bytes");
    }
    if !name.bytes().all(|b| b.is_ascii_graphic() && b != b':') {
        return invalid("names are printable ASCII without spaces or ':'");
    }
    if value.chars().any(|c| c.is_control() && c != '\t') {
        return invalid("values must not hold control characters");
    }
    if value.chars().any(|c| matches!(c, '\u{fffe}' | '\u{ffff}')) {
        return invalid("values must not hold the noncharacters U+FFFE or U+FFFF");
    }
    if value.len() > MAX_HEADER_VALUE_LEN {
        return invalid("values are at most 8 KiB");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ManualClock, OrderingMode};
    use std::sync::Arc;

    static SPEC: OutboxSpec<u32> = OutboxSpec::json("order-events").to_queue("orders");

    fn buffer() -> OutboxBuffer {
        let clock: SharedClock = Arc::new(ManualClock::starting_now());
        OutboxBuffer::new(clock.clone(), HybridClock::new(clock))
    }

    #[test]
    fn ids_count_as_chosen_once_set_or_pushed_until_taken() {
        let mut buf = buffer();
        buf.stage(&SPEC, "order.placed", &1).unwrap();
        assert!(!buf.ids_chosen(), "a fresh UUIDv7 cannot be stored yet");
        buf.stage(&SPEC, "order.placed", &2)
            .unwrap()
            .event_id(Uuid::now_v7());
        assert!(buf.ids_chosen());
        let taken = buf.take().unwrap();
        assert!(!buf.ids_chosen(), "taking empties the buffer");
        buf.push(taken[0].clone());
        assert!(buf.ids_chosen(), "a pushed event brings its own id");
    }

    #[test]
    fn stage_encodes_and_applies_options() {
        let mut buf = buffer();
        let id = Uuid::now_v7();
        buf.stage(&SPEC, "order.placed", &7)
            .unwrap()
            .event_id(id)
            .ordering_key("o-1")
            .header("traceparent", "00-1-2-01")
            .correlation_id("c")
            .delay(Duration::from_secs(3));
        let staged = buf.take().unwrap();
        assert_eq!(staged.len(), 1);
        let env = &staged[0].envelope;
        assert_eq!(
            (env.event_id, env.route.as_str(), env.destination.as_str()),
            (id, "order-events", "orders")
        );
        assert_eq!(&env.payload[..], b"7");
        assert_eq!(env.ordering_key.as_deref(), Some("o-1"));
        assert_eq!(env.traceparent(), Some("00-1-2-01"));
        assert_eq!(staged[0].delay, Some(Duration::from_secs(3)));
        assert!(buf.is_empty());
        assert_eq!(SPEC.route().ordering, OrderingMode::Unordered);
    }

    #[test]
    fn spec_problems_fail_at_stage() {
        let mut buf = buffer();
        let bad: OutboxSpec<u32> = OutboxSpec::json("order-events");
        assert!(matches!(
            buf.stage(&bad, "t", &1),
            Err(StageError::Spec(SpecError::NoDestination { .. }))
        ));
        assert!(matches!(
            buf.stage(&SPEC, "", &1),
            Err(StageError::EventType(_))
        ));
        assert!(matches!(
            buf.stage(&SPEC, "a\nb", &1),
            Err(StageError::EventType(_))
        ));
        assert!(buf.is_empty());
    }

    #[test]
    fn payloads_that_do_not_encode_fail_at_stage() {
        static MAPS: OutboxSpec<std::collections::HashMap<(u8, u8), u8>> =
            OutboxSpec::json("maps").to_queue("maps");
        let mut buf = buffer();
        let payload = [((1, 2), 3)].into_iter().collect();
        assert!(matches!(
            buf.stage(&MAPS, "t", &payload),
            Err(StageError::Codec(_))
        ));
    }

    #[test]
    fn bad_options_fail_at_take() {
        let reserved = [
            ("ce-id", "x"),
            ("tidings-hlc", "1"),
            ("Content-Type", "x"),
            ("CC", "x"),
            ("x-delivery-count", "42"),
            ("X-Tidings-Prior-Deliveries", "99"),
            ("x-death", "x"),
            ("x-last-death-queue", "q"),
        ];
        for (name, value) in reserved {
            let mut buf = buffer();
            buf.stage(&SPEC, "t", &1).unwrap().header(name, value);
            assert!(
                matches!(buf.take(), Err(StageError::ReservedHeader { .. })),
                "{name}"
            );
        }
        let long = "v".repeat(MAX_HEADER_VALUE_LEN + 1);
        let invalid = [
            ("a b", "x"),
            ("", "x"),
            ("ok", "line\nbreak"),
            ("ok", "\u{fffe}"),
            ("ok", long.as_str()),
        ];
        for (name, value) in invalid {
            let mut buf = buffer();
            buf.stage(&SPEC, "t", &1).unwrap().header(name, value);
            assert!(
                matches!(buf.take(), Err(StageError::Header { .. })),
                "{name:?}"
            );
        }
        let mut buf = buffer();
        buf.stage(&SPEC, "t", &1)
            .unwrap()
            .ordering_key("k".repeat(129));
        assert!(matches!(buf.take(), Err(StageError::OrderingKey(_))));
    }

    #[test]
    fn reserved_headers_name_their_owner() {
        let mut buf = buffer();
        buf.stage(&SPEC, "t", &1).unwrap().header("BCC", "x");
        let err = buf.take().unwrap_err();
        assert_eq!(
            err.to_string(),
            "header \"BCC\" is reserved: RabbitMQ gives it a meaning, as the broker routes by them, \
             counts deliveries in them or records dead-lettering in them"
        );
    }

    #[test]
    fn headers_may_not_take_more_than_their_share_together() {
        let mut buf = buffer();
        let value = "v".repeat(MAX_HEADER_VALUE_LEN - 1);
        let mut staged = buf.stage(&SPEC, "t", &1).unwrap();
        for name in ["a", "b"] {
            staged = staged.header(name, value.clone());
        }
        assert!(buf.take().is_ok(), "two full values fit");
        let mut staged = buf.stage(&SPEC, "t", &1).unwrap();
        for name in ["a", "b", "c"] {
            staged = staged.header(name, value.clone());
        }
        assert!(matches!(buf.take(), Err(StageError::Headers { .. })));
    }

    #[test]
    fn duplicate_event_ids_fail_at_take() {
        let mut buf = buffer();
        let id = Uuid::now_v7();
        buf.stage(&SPEC, "t", &1).unwrap().event_id(id);
        buf.stage(&SPEC, "t", &2).unwrap().event_id(id);
        assert!(matches!(buf.take(), Err(StageError::DuplicateEventId(d)) if d == id));
    }

    #[test]
    fn hlc_ordering_stamps_events() {
        static HLC: OutboxSpec<u32> = OutboxSpec::json("e").to_queue("q").hlc_ordering();
        let mut buf = buffer();
        buf.stage(&HLC, "t", &1).unwrap();
        buf.stage(&HLC, "t", &2).unwrap();
        buf.stage(&SPEC, "t", &3).unwrap();
        let staged = buf.take().unwrap();
        assert!(staged[0].envelope.hlc.unwrap() < staged[1].envelope.hlc.unwrap());
        assert_eq!(staged[2].envelope.hlc, None);
    }
}
