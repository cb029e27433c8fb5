//! What a handler reports when it fails.

use std::fmt;

use tidings_core::BoxError;
use tidings_core::port::error_chain;

/// A handler's failure, transient (retry, then redeliver) or permanent
/// (dead-letter at once).
///
/// Any `std::error::Error` converts with `?` into a failure whose kind the
/// inbox store reads (see [`ConsumerOptions::classify_errors`]): a
/// PostgreSQL constraint violation or data error, or a MongoDB duplicate
/// key or failed validation, can never succeed on retry and is permanent;
/// anything else is transient. [`HandlerError::transient`] and
/// [`HandlerError::permanent`] say the kind outright and are kept as said.
///
/// [`ConsumerOptions::classify_errors`]: crate::ConsumerOptions::classify_errors
pub struct HandlerError {
    kind: Kind,
    source: BoxError,
}

/// Who decided whether a failure is transient.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Transient,
    Permanent,
    /// Converted by `?`: the store's reading decides, transient otherwise.
    Unsaid,
}

impl HandlerError {
    /// A failure that may go away: the runner retries in process, then
    /// nacks for redelivery.
    pub fn transient(error: impl Into<BoxError>) -> Self {
        Self {
            kind: Kind::Transient,
            source: error.into(),
        }
    }

    /// A failure no retry can fix: the runner dead-letters the message.
    pub fn permanent(error: impl Into<BoxError>) -> Self {
        Self {
            kind: Kind::Permanent,
            source: error.into(),
        }
    }

    /// Whether retrying may succeed, as far as the handler said: a failure
    /// converted by `?` counts as transient here, before the store reads
    /// it.
    pub fn is_transient(&self) -> bool {
        self.kind != Kind::Permanent
    }

    /// Whether retrying may succeed, once `is_permanent` (the inbox store's
    /// reading) has read a failure the handler did not classify.
    pub(crate) fn is_transient_by(
        &self,
        is_permanent: impl FnOnce(&(dyn std::error::Error + 'static)) -> bool,
    ) -> bool {
        match self.kind {
            Kind::Transient => true,
            Kind::Permanent => false,
            Kind::Unsaid => !is_permanent(&*self.source),
        }
    }

    /// The underlying error.
    pub fn source(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.source
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for HandlerError {
    fn from(error: E) -> Self {
        Self {
            kind: Kind::Unsaid,
            source: error.into(),
        }
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
            .field("kind", &self.kind)
            .field("source", &self.source)
            .finish()
    }
}
