//! The options of one staged event.

use std::time::{Duration, SystemTime};

use uuid::Uuid;

use super::{Cause, Delay, StagedEvent};
use crate::Envelope;
use crate::clock::truncate_to_micros;

/// Options of one staged event. Invalid options are reported when the
/// context commits.
#[derive(Debug)]
pub struct Staged<'a> {
    pub(super) event: &'a mut StagedEvent,
    pub(super) ids_chosen: &'a mut bool,
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
    /// - names that are empty, longer than [`MAX_HEADER_NAME_LEN`](super::MAX_HEADER_NAME_LEN) or hold
    ///   anything but printable ASCII without `:`;
    /// - values with control characters (tab aside) or U+FFFE/U+FFFF, or
    ///   longer than [`MAX_HEADER_VALUE_LEN`](super::MAX_HEADER_VALUE_LEN);
    /// - headers of one event taking more than [`MAX_HEADERS_LEN`](super::MAX_HEADERS_LEN) together.
    pub fn header(self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.event
            .envelope
            .headers
            .insert(name.into(), value.into());
        self
    }

    /// Sets the correlation id, replacing the one the buffer's
    /// [cause](OutboxBuffer::caused_by) gave the event.
    pub fn correlation_id(self, id: impl Into<String>) -> Self {
        self.event.envelope.correlation_id = Some(id.into());
        self
    }

    /// Sets the causation id, replacing the one the buffer's
    /// [cause](OutboxBuffer::caused_by) gave the event.
    pub fn causation_id(self, id: impl Into<String>) -> Self {
        self.event.envelope.causation_id = Some(id.into());
        self
    }

    /// Makes `envelope` the cause of this event alone: its correlation id
    /// becomes the envelope's (or the envelope's event id, when it has
    /// none) and its causation id the envelope's event id, replacing what
    /// the event carried ([`Cause`]).
    ///
    /// ```
    /// use tidings_core::memory::MemoryStore;
    /// use tidings_core::{Envelope, OutboxSpec};
    ///
    /// static BILLED: OutboxSpec<u32> = OutboxSpec::json("billing-events").destination("billing");
    ///
    /// let placed = Envelope::new("order-events", "orders", "order.placed", "7".into(), "application/json");
    /// let mut ctx = MemoryStore::new().begin();
    /// let staged = ctx.outbox().stage(&BILLED, "order.billed", &7)?.caused_by(&placed);
    /// assert_eq!(staged.envelope().correlation_id, Some(placed.event_id.to_string()));
    /// # Ok::<_, tidings_core::StageError>(())
    /// ```
    pub fn caused_by(self, envelope: &Envelope) -> Self {
        let cause = Cause::of(envelope);
        let e = &mut self.event.envelope;
        e.correlation_id = Some(cause.correlation_id().to_owned());
        e.causation_id = Some(cause.causation_id().to_owned());
        self
    }

    /// Makes the event expire at `at` (kept to the microsecond): the
    /// relay fails it instead of publishing it from then on, and a
    /// consumer receiving it later parks or skips it
    /// (`ConsumerOptions::expired`). The time travels with the event, as
    /// the `tidings-expires-at` attribute on the wire.
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use tidings_core::memory::MemoryStore;
    /// use tidings_core::OutboxSpec;
    ///
    /// static PRICES: OutboxSpec<u32> = OutboxSpec::json("prices").destination("prices");
    ///
    /// let mut ctx = MemoryStore::new().begin();
    /// let at = SystemTime::now() + Duration::from_secs(300);
    /// let staged = ctx.outbox().stage(&PRICES, "price.quoted", &99)?.expires_at(at);
    /// assert_eq!(staged.envelope().expires_at, Some(tidings_core::truncate_to_micros(at)));
    /// # Ok::<_, tidings_core::StageError>(())
    /// ```
    pub fn expires_at(self, at: SystemTime) -> Self {
        self.event.envelope.expires_at = Some(truncate_to_micros(at));
        self
    }

    /// Makes the event expire `ttl` after it was staged (its
    /// `occurred_at`); see [`expires_at`](Self::expires_at).
    pub fn expires_in(self, ttl: Duration) -> Self {
        let at = self.event.envelope.occurred_at + ttl;
        self.expires_at(at)
    }

    /// Sets the tenant id.
    pub fn tenant_id(self, id: impl Into<String>) -> Self {
        self.event.envelope.tenant_id = Some(id.into());
        self
    }

    /// Keeps the event from being relayed until `delay` after commit.
    /// Replaces a [`not_before`](Self::not_before) set earlier.
    pub fn delay(self, delay: Duration) -> Self {
        self.event.delay = Some(Delay::For(delay));
        self
    }

    /// Keeps the event from being relayed before `at`; a time already
    /// passed relays it at once, as if none were set. Replaces a
    /// [`delay`](Self::delay) set earlier.
    ///
    /// The store compares `at` with its own clock: the database server's
    /// on PostgreSQL, this process's on MongoDB and in memory.
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use tidings_core::memory::MemoryStore;
    /// use tidings_core::OutboxSpec;
    ///
    /// static REMINDERS: OutboxSpec<u32> = OutboxSpec::json("reminders").destination("reminders");
    ///
    /// let store = MemoryStore::new();
    /// let mut ctx = store.begin();
    /// let tomorrow = SystemTime::now() + Duration::from_secs(24 * 3600);
    /// ctx.outbox().stage(&REMINDERS, "cart.abandoned", &7)?.not_before(tomorrow);
    /// ctx.commit()?;
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// ```
    pub fn not_before(self, at: SystemTime) -> Self {
        self.event.delay = Some(Delay::Until(at));
        self
    }

    /// The event as staged so far.
    pub fn envelope(&self) -> &Envelope {
        &self.event.envelope
    }
}
