//! The cause of staged events: the message a handler was handling when it
//! staged them, so every event of one business flow carries the flow's
//! correlation id and names the event that caused it.

use crate::{Envelope, OutboxBuffer};

/// What events staged in reaction to a message inherit from it: the
/// correlation id of the flow, and the message's event id as their
/// causation id.
///
/// The correlation id is the message's own correlation id, or, when the
/// message has none, its event id: the first event of a flow starts the
/// flow, so everything that follows from it shares one correlation id
/// even when its producer set none.
///
/// ```
/// use tidings_core::Envelope;
/// use tidings_core::staging::Cause;
///
/// let mut placed = Envelope::new("order-events", "orders", "order.placed", "{}".into(), "application/json");
/// let cause = Cause::of(&placed);
/// assert_eq!(cause.correlation_id(), placed.event_id.to_string());
/// assert_eq!(cause.causation_id(), placed.event_id.to_string());
///
/// placed.correlation_id = Some("checkout-17".into());
/// assert_eq!(Cause::of(&placed).correlation_id(), "checkout-17");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    correlation_id: String,
    causation_id: String,
}

impl Cause {
    /// The cause `envelope` gives the events staged in reaction to it.
    pub fn of(envelope: &Envelope) -> Self {
        let causation_id = envelope.event_id.to_string();
        let correlation_id = envelope
            .correlation_id
            .clone()
            .unwrap_or_else(|| causation_id.clone());
        Self {
            correlation_id,
            causation_id,
        }
    }

    /// The correlation id the events inherit.
    pub fn correlation_id(&self) -> &str {
        &self.correlation_id
    }

    /// The causation id the events get: the causing event's id.
    pub fn causation_id(&self) -> &str {
        &self.causation_id
    }

    /// Stamps `envelope` with the cause, leaving an id it already carries
    /// alone.
    pub fn stamp(&self, envelope: &mut Envelope) {
        if envelope.correlation_id.is_none() {
            envelope.correlation_id = Some(self.correlation_id.clone());
        }
        if envelope.causation_id.is_none() {
            envelope.causation_id = Some(self.causation_id.clone());
        }
    }
}

/// A transaction that events are staged in, as the consumer sees it: the
/// consumer sets the message it is handling as the cause of whatever the
/// handler stages in the transaction, and clears it after.
///
/// Every store's transaction implements it (the bound on
/// [`InboxStore::Tx`](crate::InboxStore::Tx) makes sure of it), most by
/// handing the cause to their [`OutboxBuffer`]; a transaction that stages
/// nothing, such as `()`, ignores it.
///
/// ```
/// use tidings_core::memory::MemoryStore;
/// use tidings_core::staging::{Cause, CausalContext};
/// use tidings_core::{Envelope, OutboxSpec};
///
/// static BILLED: OutboxSpec<u32> = OutboxSpec::json("billing-events").destination("billing");
///
/// let placed = Envelope::new("order-events", "orders", "order.placed", "7".into(), "application/json");
/// let store = MemoryStore::new();
/// let mut ctx = store.begin();
/// ctx.set_cause(Some(Cause::of(&placed)));
/// let staged = ctx.outbox().stage(&BILLED, "order.billed", &7)?;
/// assert_eq!(staged.envelope().causation_id, Some(placed.event_id.to_string()));
/// # Ok::<_, tidings_core::StageError>(())
/// ```
pub trait CausalContext {
    /// Makes `cause` the cause of the events staged from now on; `None`
    /// stops stamping them.
    fn set_cause(&mut self, cause: Option<Cause>);

    /// The cause events staged now get, if any.
    fn cause(&self) -> Option<&Cause>;
}

impl CausalContext for OutboxBuffer {
    fn set_cause(&mut self, cause: Option<Cause>) {
        OutboxBuffer::set_cause(self, cause);
    }

    fn cause(&self) -> Option<&Cause> {
        OutboxBuffer::cause(self)
    }
}

/// A transaction without an outbox, such as the one of a consumer without
/// an inbox: nothing is staged, so there is nothing to stamp.
impl CausalContext for () {
    fn set_cause(&mut self, _cause: Option<Cause>) {}

    fn cause(&self) -> Option<&Cause> {
        None
    }
}
