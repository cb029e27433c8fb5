//! The one place where sqlx errors become port errors.

use tidings_core::port::DriverErrorClass;
use tidings_core::{CommitFailure, InboxError, StageError, StoreError};

/// How a driver error should be reported, whatever the port.
type Class = DriverErrorClass;

/// A statement prepared by name was found already there or missing: a
/// pooler in transaction mode moved the connection to another server
/// session, and the store was not told
/// ([`Pooling::Transaction`](crate::Pooling::Transaction)).
const POOLER: Class = Class::Misconfigured(POOLER_HINT);

/// A table, column or function the store needs does not exist.
const SCHEMA: Class = Class::Schema(MIGRATE_HINT);

fn classify(error: &sqlx::Error) -> Class {
    match error {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed
        | sqlx::Error::BeginFailed => Class::Unavailable,
        sqlx::Error::PoolTimedOut => Class::Timeout,
        sqlx::Error::Database(db) => classify_code(db.code().as_deref().unwrap_or("")),
        _ => Class::Backend,
    }
}

/// Classifies a SQLSTATE code.
fn classify_code(code: &str) -> Class {
    match code {
        // connection exceptions, operator intervention (shutdown, cannot
        // connect now), too many connections, out of memory or disk
        c if c.starts_with("08") || c.starts_with("57P") => Class::Unavailable,
        "53000" | "53100" | "53200" | "53300" => Class::Unavailable,
        // serialization failure, deadlock, lock not available, unique
        // violation (two claims of one ordering key racing)
        "40001" | "40P01" | "55P03" | "23505" => Class::Conflict,
        // statement timeout; a locked claim's transaction idle past its
        // lease, ended by the server, which released its rows
        "57014" | "25P03" => Class::Conflict,
        // undefined table, column, function, schema
        "42P01" | "42703" | "42883" | "3F000" => SCHEMA,
        // duplicate prepared statement, prepared statement does not exist
        "42P05" | "26000" => POOLER,
        _ => Class::Backend,
    }
}

/// Whether `error`, met on a connection kept idle, says the connection is
/// no longer usable: the server cannot be reached or ended the
/// connection, or ended the transaction begun on it ahead of a claim,
/// idle past its lease.
pub(crate) fn is_stale(error: &sqlx::Error) -> bool {
    let ended_idle =
        matches!(error, sqlx::Error::Database(db) if db.code().as_deref() == Some("25P03"));
    ended_idle || classify(error) == Class::Unavailable
}

const MIGRATE_HINT: &str = "run PgOutboxStore::migrate() to create or update the schema";

/// What a pooler error says after the server's message.
pub(crate) const POOLER_HINT: &str = "the connection goes through a pooler in transaction mode \
     (PgBouncer pool_mode = transaction), which keeps no statement prepared by name across \
     transactions; build the store with PgOutboxOptions::pooling(Pooling::Transaction)";

/// Maps a driver error to the outbox store's error.
pub(crate) fn store_error(error: sqlx::Error) -> StoreError {
    classify(&error).store_error(error)
}

/// Maps the error of a migration's statement to the outbox store's error: a
/// name already taken in the schema is a schema problem that names the
/// relation, not a backend failure.
pub(crate) fn migration_error(error: sqlx::Error, migration: &str, schema: &str) -> StoreError {
    match &error {
        // duplicate table (any relation), duplicate object
        sqlx::Error::Database(db) if matches!(db.code().as_deref(), Some("42P07" | "42710")) => {
            StoreError::Schema(format!(
                "migration {migration} in schema {schema}: {}; another table or index \
                 there has a name this store needs: give the outbox or inbox table another \
                 name with PgOutboxOptions::table or inbox_table",
                db.message()
            ))
        }
        _ => store_error(error),
    }
}

/// Maps a driver error to the inbox's error.
pub(crate) fn inbox_error(error: sqlx::Error) -> InboxError {
    classify(&error).inbox_error(error)
}

/// Committing a [`PgContext`](crate::PgContext) failed; nothing of the
/// transaction was written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CommitError {
    /// A staged event is invalid (bad header, ordering key, duplicate id).
    #[error(transparent)]
    Stage(#[from] StageError),
    /// The database refused or could not be reached.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl CommitFailure for CommitError {
    fn into_store(self) -> Result<StoreError, Self> {
        match self {
            Self::Store(e) => Ok(e),
            other => Err(other),
        }
    }
}

impl CommitError {
    /// Whether running the whole transaction again may succeed.
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Stage(_) => false,
            Self::Store(e) => e.is_transient(),
        }
    }
}

impl From<sqlx::Error> for CommitError {
    fn from(error: sqlx::Error) -> Self {
        Self::Store(store_error(error))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_map_to_classes() {
        assert_eq!(classify_code("08006"), Class::Unavailable);
        assert_eq!(classify_code("57P01"), Class::Unavailable);
        assert_eq!(classify_code("53300"), Class::Unavailable);
        assert_eq!(classify_code("40001"), Class::Conflict);
        assert_eq!(classify_code("40P01"), Class::Conflict);
        assert_eq!(classify_code("23505"), Class::Conflict);
        assert_eq!(classify_code("42P01"), SCHEMA);
        assert_eq!(classify_code("22P02"), Class::Backend);
        assert_eq!(classify_code("42P05"), POOLER);
        assert_eq!(classify_code("26000"), POOLER);
    }

    #[test]
    fn transient_errors_say_so() {
        let io = || sqlx::Error::Io(std::io::ErrorKind::ConnectionReset.into());
        assert!(store_error(io()).is_transient());
        assert!(inbox_error(io()).is_transient());
        assert!(matches!(
            store_error(sqlx::Error::PoolTimedOut),
            StoreError::Timeout
        ));
        assert!(!store_error(sqlx::Error::RowNotFound).is_transient());
        assert!(!CommitError::from(sqlx::Error::RowNotFound).is_transient());
    }
}
