//! The staging buffer every backend's transaction context shares.
//!
//! `ctx.outbox().stage(&SPEC, "order.placed", &payload)` encodes the payload
//! with the spec's codec and buffers an envelope; options are set on the
//! returned [`Staged`]. The backend writes the buffer in one statement when
//! the context commits, and a context dropped or rolled back takes the buffer
//! with it.
//!
//! Events staged in reaction to a message inherit its correlation id and
//! name it as their cause ([`Cause`]): the consumer sets the message it
//! handles as the cause of its handler's transaction
//! ([`CausalContext`]), and code staging outside a consumer sets one with
//! [`OutboxBuffer::caused_by`] or, for one event, [`Staged::caused_by`].

mod cause;
mod checks;
mod delay;
mod error;
mod known_routes;
mod staged;

pub use cause::{CausalContext, Cause};
pub use checks::{
    MAX_EVENT_TYPE_LEN, MAX_HEADER_NAME_LEN, MAX_HEADER_VALUE_LEN, MAX_HEADERS_LEN,
    MAX_ORDERING_KEY_LEN,
};
pub use delay::Delay;
pub use error::StageError;
pub use known_routes::KnownRoutes;
pub use staged::Staged;

use checks::{check_event_type, check_options, check_schedule};

use crate::clock::truncate_to_micros;
use crate::{Codec, Envelope, HybridClock, OutboxSpec, SharedClock};

/// An event staged in a transaction, waiting for its commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StagedEvent {
    /// The event.
    pub envelope: Envelope,
    /// Keeps the row invisible to the relay for a while after commit, or
    /// until a time; `None` makes it visible at once.
    pub delay: Option<Delay>,
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
    /// What events staged from now on are stamped with.
    cause: Option<Cause>,
}

impl OutboxBuffer {
    /// An empty buffer stamping events with `clock` and `hlc`.
    pub fn new(clock: SharedClock, hlc: HybridClock) -> Self {
        Self {
            clock,
            hlc,
            staged: Vec::new(),
            ids_chosen: false,
            cause: None,
        }
    }

    /// Makes `envelope` the cause of the events staged from now on: each
    /// gets the envelope's correlation id (its event id, when it has none)
    /// and the envelope's event id as its causation id, unless
    /// [`Staged::correlation_id`] or [`Staged::causation_id`] sets its
    /// own ([`Cause`]). The consumer does this for every handler; call it
    /// when you react to a message outside one.
    ///
    /// ```
    /// use tidings_core::memory::MemoryStore;
    /// use tidings_core::{Envelope, OutboxSpec};
    ///
    /// static BILLED: OutboxSpec<u32> = OutboxSpec::json("billing-events").destination("billing");
    ///
    /// let mut placed = Envelope::new("order-events", "orders", "order.placed", "7".into(), "application/json");
    /// placed.correlation_id = Some("checkout-17".into());
    /// let store = MemoryStore::new();
    /// let mut ctx = store.begin();
    /// let outbox = ctx.outbox().caused_by(&placed);
    /// let billed = outbox.stage(&BILLED, "order.billed", &7)?.envelope().clone();
    /// let mailed = outbox.stage(&BILLED, "invoice.mailed", &7)?.correlation_id("mail-1").envelope().clone();
    /// assert_eq!(billed.correlation_id.as_deref(), Some("checkout-17"));
    /// assert_eq!(billed.causation_id, Some(placed.event_id.to_string()));
    /// assert_eq!(mailed.correlation_id.as_deref(), Some("mail-1"));
    /// # Ok::<_, tidings_core::StageError>(())
    /// ```
    pub fn caused_by(&mut self, envelope: &Envelope) -> &mut Self {
        self.cause = Some(Cause::of(envelope));
        self
    }

    /// Sets or clears the cause of the events staged from now on (see
    /// [`caused_by`](Self::caused_by)). Events staged already keep theirs.
    pub fn set_cause(&mut self, cause: Option<Cause>) {
        self.cause = cause;
    }

    /// The cause of the events staged from now on, if any.
    pub fn cause(&self) -> Option<&Cause> {
        self.cause.as_ref()
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
        if let Some(cause) = &self.cause {
            cause.stamp(&mut envelope);
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
    /// another outbox. Its options are checked at commit like any other;
    /// it keeps its own correlation and causation ids, whatever the
    /// buffer's cause.
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
    /// ordering key or headers are invalid;
    /// [`StageError::ExpiresBeforeRelay`] when an event expires before it
    /// may first be relayed; [`StageError::DuplicateEventId`]
    /// when two events of one route share an id. The buffer is left as it was.
    pub fn take(&mut self) -> Result<Vec<StagedEvent>, StageError> {
        for event in &self.staged {
            check_options(&event.envelope)?;
            check_schedule(event)?;
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

/// Buffers events built elsewhere, each as [`OutboxBuffer::push`] does.
impl Extend<StagedEvent> for OutboxBuffer {
    fn extend<I: IntoIterator<Item = StagedEvent>>(&mut self, events: I) {
        events.into_iter().for_each(|event| self.push(event));
    }
}

#[cfg(test)]
mod tests;
