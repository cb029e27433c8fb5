//! How a backend sorts its driver's errors, and the port errors each sort
//! becomes: the one mapping every store shares, so a store only decides
//! which sort an error is.

use std::error::Error;

use super::{InboxError, StoreError, error_chain};

/// What kind of failure a driver error is, whatever the port.
///
/// A store classifies its driver's errors once; [`store_error`](Self::store_error)
/// and [`inbox_error`](Self::inbox_error) turn the class into each port's
/// error the same way for every backend.
///
/// ```
/// use tidings_core::StoreError;
/// use tidings_core::port::DriverErrorClass;
///
/// let io = std::io::Error::other("connection reset");
/// let error = DriverErrorClass::Unavailable.store_error(io);
/// assert!(matches!(error, StoreError::Unavailable(_)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DriverErrorClass {
    /// The server cannot be reached, went away or refuses connections.
    Unavailable,
    /// The driver or the server gave up on a time limit.
    Timeout,
    /// A concurrent transaction conflicted; running again resolves it.
    Conflict,
    /// A table or collection the store needs does not exist; the hint says
    /// how to create it.
    Schema(&'static str),
    /// The store's settings do not fit the server; the hint says what to
    /// change.
    Misconfigured(&'static str),
    /// Anything else.
    Backend,
}

impl DriverErrorClass {
    /// The outbox store's error for `error` of this class.
    pub fn store_error<E: Error + Send + Sync + 'static>(self, error: E) -> StoreError {
        match self {
            Self::Unavailable => StoreError::Unavailable(error.into()),
            Self::Timeout => StoreError::Timeout,
            Self::Conflict => StoreError::Conflict(error.into()),
            Self::Schema(hint) => StoreError::Schema(with_hint(&error, hint)),
            Self::Misconfigured(hint) => StoreError::Misconfigured(with_hint(&error, hint)),
            Self::Backend => StoreError::Backend(error.into()),
        }
    }

    /// The inbox's error for `error` of this class; a timeout counts as the
    /// database being unavailable.
    pub fn inbox_error<E: Error + Send + Sync + 'static>(self, error: E) -> InboxError {
        match self {
            Self::Unavailable | Self::Timeout => InboxError::Unavailable(error.into()),
            Self::Conflict => InboxError::Conflict(error.into()),
            Self::Schema(hint) => InboxError::Schema(with_hint(&error, hint)),
            Self::Misconfigured(hint) => InboxError::Misconfigured(with_hint(&error, hint)),
            Self::Backend => InboxError::Backend(error.into()),
        }
    }
}

/// Whether `error` or any error it was caused by is a `D` for which `test`
/// holds: for a store reading its driver's error inside a port's or a
/// handler's error.
///
/// ```
/// use tidings_core::port::caused_by;
///
/// let io = std::io::Error::other("gone");
/// assert!(caused_by::<std::io::Error>(&io, |_| true));
/// ```
pub fn caused_by<D: Error + 'static>(
    error: &(dyn Error + 'static),
    test: impl Fn(&D) -> bool,
) -> bool {
    std::iter::successors(Some(error), |&e| e.source())
        .any(|e| e.downcast_ref::<D>().is_some_and(&test))
}

/// The error's whole chain, then what to do about it.
fn with_hint(error: &(dyn Error + 'static), hint: &str) -> String {
    format!("{}; {hint}", error_chain(error))
}
