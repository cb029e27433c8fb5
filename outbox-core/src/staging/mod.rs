//! The staging buffer every backend's transaction context shares.
//!
//! `ctx.outbox().stage(&SPEC, "order.placed", &payload)` encodes the payload
//! with the spec's codec and buffers an envelope; options are set on the
//! returned [`Staged`]. The backend writes the buffer in one statement when
//! the context commits, and a context dropped or rolled back takes the buffer
//! with it.

use std::time::Duration;

use uuid::Uuid;

mod checks;
mod error;
mod known_routes;

pub use checks::{
    MAX_EVENT_TYPE_LEN, MAX_HEADER_NAME_LEN, MAX_HEADER_VALUE_LEN, MAX_HEADERS_LEN,
    MAX_ORDERING_KEY_LEN,
};
pub use error::StageError;
pub use known_routes::KnownRoutes;

use checks::{check_event_type, check_options};

use crate::clock::truncate_to_micros;
use crate::{Codec, Envelope, HybridClock, OutboxSpec, SharedClock};

/// An event staged in a transaction, waiting for its commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StagedEvent {
    /// The event.
    pub envelope: Envelope,
    /// Keeps the row invisible to the relay for this long after commit.
    pub delay: Option<Duration>,
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
    ///
    /// # Errors
    ///
    /// [`StageError::Spec`] when the spec is unusable (an illegal name, no
    /// destination, an impossible retry policy); [`StageError::EventType`] when
    /// `event_type` is empty, longer than 200 characters or holds control
    /// characters; [`StageError::Codec`] when the payload does not encode.
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
            route.name.as_ref(),
            route.require_destination()?,
            event_type,
            bytes,
            spec.content_type(),
        );
        envelope.occurred_at = truncate_to_micros(self.clock.now());
        if route.hlc_ordering {
            envelope.hlc = Some(self.hlc.now());
        }
        crate::telemetry::capture(&mut envelope);
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
    ///
    /// # Errors
    ///
    /// [`StageError::OrderingKey`], [`StageError::ReservedHeader`],
    /// [`StageError::Header`] or [`StageError::Headers`] when an event's
    /// ordering key or headers are invalid; [`StageError::DuplicateEventId`]
    /// when two events of one route share an id. The buffer is left as it was.
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

    /// Adds an application header. It reaches the handler unchanged, under
    /// the same name.
    ///
    /// `traceparent` and `tracestate` are the W3C trace context: with the
    /// `otel` feature, staging has already set them to the context of the
    /// event's `create` span, and a value set here replaces it, for a
    /// producer that propagates a context of its own (an incoming
    /// request's) instead of a span's. The consumer follows whichever the
    /// event carries; one that does not parse is ignored there, never a
    /// failure ([`telemetry`](crate::telemetry)).
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ManualClock, OrderingMode, SpecError};
    use std::sync::Arc;

    /// The spec the staging tests stage under.
    pub(super) static SPEC: OutboxSpec<u32> =
        OutboxSpec::json("order-events").destination("orders");

    /// A buffer on a manual clock.
    pub(super) fn buffer() -> OutboxBuffer {
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
            OutboxSpec::json("maps").destination("maps");
        let mut buf = buffer();
        let payload = [((1, 2), 3)].into_iter().collect();
        assert!(matches!(
            buf.stage(&MAPS, "t", &payload),
            Err(StageError::Codec(_))
        ));
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
        static HLC: OutboxSpec<u32> = OutboxSpec::json("e").destination("q").hlc_ordering();
        let mut buf = buffer();
        buf.stage(&HLC, "t", &1).unwrap();
        buf.stage(&HLC, "t", &2).unwrap();
        buf.stage(&SPEC, "t", &3).unwrap();
        let staged = buf.take().unwrap();
        assert!(staged[0].envelope.hlc.unwrap() < staged[1].envelope.hlc.unwrap());
        assert_eq!(staged[2].envelope.hlc, None);
    }
}
