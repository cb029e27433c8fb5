//! The isolation level a handler's transaction runs at.

use std::fmt;

/// The isolation level of a handler's transaction, where a consumer or an
/// event type asks for one other than the store's default
/// ([`ConsumerOptions::isolation`] in `tidings-consumer`). A store opens
/// its transaction at the level with [`InboxStore::begin_at`] and says
/// which levels it offers with [`InboxStore::offers_isolation`].
///
/// The names are SQL's, and a store offers a level only where it gives
/// at least that level's guarantees: PostgreSQL offers all three; MongoDB
/// and the in-memory store offer read committed.
///
/// [`ConsumerOptions::isolation`]: https://docs.rs/tidings-consumer
/// [`InboxStore::begin_at`]: crate::InboxStore::begin_at
/// [`InboxStore::offers_isolation`]: crate::InboxStore::offers_isolation
///
/// ```
/// use tidings_core::IsolationLevel;
///
/// assert_eq!(IsolationLevel::Serializable.to_string(), "serializable");
/// assert_eq!(IsolationLevel::RepeatableRead.sql(), "REPEATABLE READ");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum IsolationLevel {
    /// Each statement sees what was committed before it began.
    ReadCommitted,
    /// The transaction sees one snapshot throughout.
    RepeatableRead,
    /// The transaction's effect is as if it ran alone; a conflict fails
    /// it with a serialization failure, which the consumer retries as a
    /// transient error.
    Serializable,
}

impl IsolationLevel {
    /// The level's name in SQL's `SET TRANSACTION ISOLATION LEVEL`.
    pub const fn sql(self) -> &'static str {
        match self {
            Self::ReadCommitted => "READ COMMITTED",
            Self::RepeatableRead => "REPEATABLE READ",
            Self::Serializable => "SERIALIZABLE",
        }
    }
}

impl fmt::Display for IsolationLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::ReadCommitted => "read committed",
            Self::RepeatableRead => "repeatable read",
            Self::Serializable => "serializable",
        })
    }
}
