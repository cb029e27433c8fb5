//! What a handler reports when it fails.

use std::fmt;

use tidings_core::BoxError;
use tidings_core::port::error_chain;

/// A handler's failure, transient (retry, then redeliver) or permanent
/// (dead-letter at once).
///
/// Any `std::error::Error` converts into a transient one with `?`; say
/// [`HandlerError::permanent`] for failures no retry can fix.
pub struct HandlerError {
    transient: bool,
    source: BoxError,
}

impl HandlerError {
    /// A failure that may go away: the runner retries in process, then
    /// nacks for redelivery.
    pub fn transient(error: impl Into<BoxError>) -> Self {
        Self {
            transient: true,
            source: error.into(),
        }
    }

    /// A failure no retry can fix: the runner dead-letters the message.
    pub fn permanent(error: impl Into<BoxError>) -> Self {
        Self {
            transient: false,
            source: error.into(),
        }
    }

    /// Whether retrying may succeed.
    pub fn is_transient(&self) -> bool {
        self.transient
    }

    /// The underlying error.
    pub fn source(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.source
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for HandlerError {
    fn from(error: E) -> Self {
        Self::transient(error)
    }
}

impl fmt::Display for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&error_chain(&*self.source))
    }
}

impl fmt::Debug for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandlerError")
            .field("transient", &self.transient)
            .field("source", &self.source)
            .finish()
    }
}
