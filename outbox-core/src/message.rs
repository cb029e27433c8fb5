//! The typed message a consumer's handler receives.

use uuid::Uuid;

use crate::{Envelope, Headers};

/// A decoded message: the typed payload with the envelope it came in.
#[derive(Debug, Clone)]
pub struct Message<T> {
    /// The decoded payload.
    pub payload: T,
    /// The envelope, raw payload bytes included.
    pub envelope: Envelope,
    /// How many times the broker delivered it, where known.
    pub delivery_count: Option<u32>,
}

impl<T> Message<T> {
    /// The event id consumers dedupe on.
    pub fn event_id(&self) -> Uuid {
        self.envelope.event_id
    }

    /// The event type.
    pub fn event_type(&self) -> &str {
        &self.envelope.event_type
    }

    /// Application headers.
    pub fn headers(&self) -> &Headers {
        &self.envelope.headers
    }

    /// The ordering key, if the producer set one.
    pub fn ordering_key(&self) -> Option<&str> {
        self.envelope.ordering_key.as_deref()
    }
}
