//! Why staging refused an event.

use std::time::SystemTime;

use uuid::Uuid;

use crate::{CodecError, SpecError};

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
    /// An event's headers together are larger than [`MAX_HEADERS_LEN`](super::MAX_HEADERS_LEN).
    #[error("headers take {len} bytes; names and values together may take at most 16 KiB")]
    Headers {
        /// Their names' and values' length.
        len: usize,
    },
    /// An empty or over-long ordering key.
    #[error("ordering key {0:?} is invalid: use 1 to 128 bytes")]
    OrderingKey(String),
    /// An event that expires before the relay may first publish it
    /// ([`Staged::expires_at`](super::Staged::expires_at) at or before the
    /// end of its [`delay`](super::Staged::delay) or its
    /// [`not_before`](super::Staged::not_before)), so it could never be
    /// delivered.
    #[error(
        "event {event_id} expires at {} but may not be relayed before {}: it could never be delivered",
        humantime::format_rfc3339_micros(*expires_at),
        humantime::format_rfc3339_micros(*not_before)
    )]
    ExpiresBeforeRelay {
        /// The event.
        event_id: Uuid,
        /// Its expiry.
        expires_at: SystemTime,
        /// The earliest time it may be relayed.
        not_before: SystemTime,
    },
    /// Two staged events share an event id.
    #[error("event id {0} is staged twice in one transaction")]
    DuplicateEventId(Uuid),
}
