use std::time::Duration;

/// A spec that cannot be used as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    /// A name is empty.
    #[error("{kind} name is empty")]
    EmptyName {
        /// What the name is for (`route`, `queue`, `destination`).
        kind: &'static str,
    },
    /// A name is longer than [`MAX_NAME_LEN`](super::MAX_NAME_LEN).
    #[error("{kind} name {name:?} is {len} bytes long, the limit is {max}")]
    NameTooLong {
        /// What the name is for.
        kind: &'static str,
        /// The offending name.
        name: String,
        /// Its length in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A name holds a character outside `[A-Za-z0-9._-]` or does not start
    /// with a letter or digit.
    #[error(
        "{kind} name {name:?} has an illegal character {found:?} at byte {at}; use letters, digits, '.', '_' and '-', starting with a letter or digit"
    )]
    IllegalName {
        /// What the name is for.
        kind: &'static str,
        /// The offending name.
        name: String,
        /// The first illegal character.
        found: char,
        /// Its byte offset.
        at: usize,
    },
    /// An outbox spec has no destination, so its events cannot be relayed.
    #[error("route {route:?} has no destination; call OutboxSpec::destination(..)")]
    NoDestination {
        /// The route: the outbox spec's name.
        route: String,
    },
    /// An outbox spec's destination does not match the queue spec it is
    /// paired with.
    #[error("route {route:?} relays to {destination:?}, but the queue spec is named {queue:?}")]
    DestinationMismatch {
        /// The route: the outbox spec's name.
        route: String,
        /// Where it relays to.
        destination: String,
        /// The queue spec's name.
        queue: String,
    },
    /// A retry policy that cannot work.
    #[error("retry policy of {route:?} is invalid: {reason}")]
    InvalidRetry {
        /// The route: the outbox spec's name.
        route: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// A delay or lease duration out of range.
    #[error("{what} of {value:?} is out of range")]
    OutOfRange {
        /// What the value is.
        what: &'static str,
        /// The value.
        value: Duration,
    },
}
