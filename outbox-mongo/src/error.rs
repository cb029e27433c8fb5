//! The one place where driver errors become port errors.

use mongodb::error::{Error as MongoError, ErrorKind, WriteFailure};
use tidings_core::port::{DriverErrorClass, caused_by};
use tidings_core::{BoxError, CommitFailure, InboxError, StageError, StoreError};

pub(crate) use mongodb::error::{TRANSIENT_TRANSACTION_ERROR, UNKNOWN_TRANSACTION_COMMIT_RESULT};

/// How a driver error should be reported, whatever the port.
type Class = DriverErrorClass;

/// A collection the store needs does not exist.
const SCHEMA: Class = Class::Schema(INDEX_HINT);

fn classify(error: &MongoError) -> Class {
    if error.contains_label(TRANSIENT_TRANSACTION_ERROR) {
        return Class::Conflict;
    }
    match &*error.kind {
        ErrorKind::Io(_)
        | ErrorKind::ServerSelection { .. }
        | ErrorKind::ConnectionPoolCleared { .. }
        | ErrorKind::DnsResolve { .. }
        | ErrorKind::Shutdown => Class::Unavailable,
        _ => code(error).map_or(Class::Backend, classify_code),
    }
}

/// The server's error code, wherever the driver keeps it.
fn code(error: &MongoError) -> Option<i32> {
    match &*error.kind {
        ErrorKind::Command(e) => Some(e.code),
        ErrorKind::Write(WriteFailure::WriteError(e)) => Some(e.code),
        ErrorKind::Write(WriteFailure::WriteConcernError(e)) => Some(e.code),
        ErrorKind::InsertMany(e) => e
            .write_errors
            .as_ref()
            .and_then(|errors| errors.first().map(|w| w.code))
            .or_else(|| e.write_concern_error.as_ref().map(|w| w.code)),
        _ => None,
    }
}

/// Classifies a server error code.
fn classify_code(code: i32) -> Class {
    match code {
        // host unreachable or not found, network timeout, shutting down,
        // stepped down, not primary, interrupted by shutdown or a state
        // change, not primary or secondary
        6 | 7 | 89 | 91 | 189 | 10107 | 11600 | 11602 | 13435 | 13436 => Class::Unavailable,
        // exceeded time limit
        50 => Class::Timeout,
        // write conflict, lock timeout, no such (aborted) transaction
        112 | 24 | 251 => Class::Conflict,
        NAMESPACE_NOT_FOUND => SCHEMA,
        _ => Class::Backend,
    }
}

/// The server refused a write because a unique index already holds the key.
const DUPLICATE_KEY: i32 = 11000;
/// The collection's validator rejected the document.
const DOCUMENT_VALIDATION_FAILURE: i32 = 121;
/// An update applied to a field of the wrong type.
const TYPE_MISMATCH: i32 = 14;
/// The collection (namespace) does not exist.
const NAMESPACE_NOT_FOUND: i32 = 26;

/// A write refused for what it holds: a key a unique index already has, or
/// a document the collection's validator rejects.
pub(crate) fn never_succeeds(error: &MongoError) -> bool {
    matches!(
        code(error),
        Some(DUPLICATE_KEY | DOCUMENT_VALIDATION_FAILURE)
    )
}

/// A unique index refused the write.
pub(crate) fn is_duplicate_key(error: &MongoError) -> bool {
    code(error) == Some(DUPLICATE_KEY)
}

/// An update met a field of the wrong type (a document the store did not
/// write).
pub(crate) fn is_type_mismatch(error: &MongoError) -> bool {
    code(error) == Some(TYPE_MISMATCH)
}

/// The collection does not exist.
pub(crate) fn is_namespace_missing(error: &MongoError) -> bool {
    code(error) == Some(NAMESPACE_NOT_FOUND)
}

/// The collection to create exists already (NamespaceExists).
pub(crate) fn is_namespace_exists(error: &MongoError) -> bool {
    code(error) == Some(48)
}

/// The server has no change streams: not a replica set (40573), or the
/// command or stage is unknown to it.
pub(crate) fn change_streams_unsupported(error: &MongoError) -> bool {
    matches!(code(error), Some(40573 | 115 | 40324))
        || matches!(*error.kind, ErrorKind::IncompatibleServer { .. })
}

/// A change stream's resume point fell out of the server's history: start
/// afresh.
pub(crate) fn resume_point_lost(error: &MongoError) -> bool {
    matches!(code(error), Some(286 | 280))
}

const INDEX_HINT: &str = "run MongoOutboxStore::ensure_indexes() to create the collections";

/// Maps a driver error to the outbox store's error.
pub(crate) fn store_error(error: MongoError) -> StoreError {
    classify(&error).store_error(error)
}

/// Maps a driver error to the inbox's error.
pub(crate) fn inbox_error(error: MongoError) -> InboxError {
    classify(&error).inbox_error(error)
}

/// Whether `error`, or any error it was caused by, is a driver error
/// carrying `label`.
pub(crate) fn has_label(error: &(dyn std::error::Error + 'static), label: &str) -> bool {
    caused_by::<MongoError>(error, |e| e.contains_label(label))
}

/// Committing a [`MongoContext`](crate::MongoContext) failed; nothing of the
/// transaction was written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CommitError {
    /// A staged event is invalid (bad header, ordering key, an id staged
    /// twice in one transaction).
    #[error(transparent)]
    Stage(#[from] StageError),
    /// The database refused or could not be reached.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The caller's own code gave up (see
    /// [`MongoOutboxStore::transaction`](crate::MongoOutboxStore::transaction));
    /// never retried.
    #[error("transaction abandoned by the caller")]
    Abandoned(#[source] BoxError),
}

/// The database's failures are the store's; an invalid staged event and
/// the caller's abandoning are the transaction's own.
impl CommitFailure for CommitError {
    fn into_store(self) -> Result<StoreError, Self> {
        match self {
            Self::Store(e) => Ok(e),
            other => Err(other),
        }
    }
}

impl CommitError {
    /// An error of the caller's own, to end a transaction closure with.
    pub fn abandon(error: impl Into<BoxError>) -> Self {
        Self::Abandoned(error.into())
    }

    /// Whether running the whole transaction again may succeed: the
    /// database was unavailable or a concurrent transaction conflicted.
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Store(e) => e.is_transient(),
            _ => false,
        }
    }
}

impl From<MongoError> for CommitError {
    fn from(error: MongoError) -> Self {
        Self::Store(store_error(error))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_map_to_classes() {
        assert_eq!(classify_code(91), Class::Unavailable);
        assert_eq!(classify_code(10107), Class::Unavailable);
        assert_eq!(classify_code(50), Class::Timeout);
        assert_eq!(classify_code(112), Class::Conflict);
        assert_eq!(classify_code(26), SCHEMA);
        assert_eq!(classify_code(DUPLICATE_KEY), Class::Backend);
    }

    #[test]
    fn transient_errors_say_so() {
        let io = || MongoError::from(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        assert!(store_error(io()).is_transient());
        assert!(inbox_error(io()).is_transient());
        assert!(CommitError::from(io()).is_transient());
        assert!(!CommitError::abandon("no").is_transient());
    }
}
