//! The consumer's side of a store, as a small core trait and the
//! capabilities beside it: [`InboxStore`] marks an event inside the
//! handler's transaction; [`InboxAttempts`] counts the handler's attempts
//! that did not commit; [`InboxPurge`] deletes old marks.

use std::future::Future;

mod attempts;
mod error;
mod isolation;
mod key;
mod purge;

pub use attempts::{Attempts, InboxAttempts};
pub use error::InboxError;
pub use isolation::IsolationLevel;
pub use key::{ConsumerName, InboxKey};
pub use purge::InboxPurge;

/// Whether an event was seen before by a consumer. A store's
/// [`mark`](InboxStore::mark) answers `InboxMark` (the mark went into the
/// caller's transaction); an inbox's `begin` answers `InboxMark<Tx>`, with
/// the transaction it opened for the event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InboxMark<Tx = ()> {
    /// First time: the mark is recorded in the transaction; run the handler
    /// in it, then commit.
    Fresh(Tx),
    /// Already recorded by a committed transaction: skip the handler and
    /// ack. A transaction opened for the event is already rolled back.
    Duplicate,
}

impl<Tx> InboxMark<Tx> {
    /// The answer of a mark that inserted a row (fresh, in `tx`) or found
    /// one there already (duplicate), for stores that record marks as rows.
    ///
    /// ```
    /// use tidings_core::InboxMark;
    ///
    /// assert_eq!(InboxMark::inserted(true, ()), InboxMark::Fresh(()));
    /// assert!(InboxMark::inserted(false, ()).is_duplicate());
    /// ```
    pub fn inserted(inserted: bool, tx: Tx) -> Self {
        if inserted {
            Self::Fresh(tx)
        } else {
            Self::Duplicate
        }
    }

    /// Whether the event was handled before.
    pub fn is_duplicate(&self) -> bool {
        matches!(self, Self::Duplicate)
    }
}

/// Records `(consumer, event_id)` inside the handler's own transaction, so
/// the handler's writes and the mark commit or roll back together.
///
/// This is all a store needs for exactly-once effects. The consumer also
/// needs [`InboxAttempts`], and the inbox cleaner [`InboxPurge`]; a store
/// implements each capability it has. The inbox conformance suite of
/// `tidings-testing` holds a store to all three.
pub trait InboxStore: Clone + Send + Sync + 'static {
    /// The open transaction the handler receives, typed by the store (for
    /// example a Postgres context). The consumer makes the message it
    /// handles the [cause](crate::Cause) of what the handler stages in it,
    /// so it must be a [`CausalContext`](crate::CausalContext).
    type Tx: crate::CausalContext + Send + 'static;

    /// Opens a transaction.
    ///
    /// # Errors
    ///
    /// [`InboxError::Unavailable`] when the database cannot be reached;
    /// [`InboxError::Misconfigured`] when the store's settings do not fit the
    /// server; [`InboxError::Backend`] for any other database error.
    fn begin(&self) -> impl Future<Output = Result<Self::Tx, InboxError>> + Send;

    /// Opens a transaction at isolation `level`. The default refuses every
    /// level, for stores that offer none but their own; a store that
    /// offers levels says so in [`offers_isolation`](Self::offers_isolation).
    ///
    /// # Errors
    ///
    /// [`InboxError::Misconfigured`] when the store does not offer `level`;
    /// otherwise as [`begin`](Self::begin).
    fn begin_at(
        &self,
        level: IsolationLevel,
    ) -> impl Future<Output = Result<Self::Tx, InboxError>> + Send {
        async move { Err(InboxError::not_offered(level)) }
    }

    /// Whether [`begin_at`](Self::begin_at) opens transactions at `level`;
    /// a consumer asking for one the store does not offer refuses to
    /// start. The default offers none.
    fn offers_isolation(&self, level: IsolationLevel) -> bool {
        let _ = level;
        false
    }

    /// Records the event for the consumer within `tx`. A duplicate leaves
    /// `tx` usable.
    ///
    /// Of transactions marking one event for one consumer at once, one
    /// commits. Each other either learns [`InboxMark::Duplicate`] (a store
    /// may make it wait for the first to end, as PostgreSQL does) or fails
    /// with a transient [`InboxError::Conflict`], here (MongoDB) or at
    /// [`commit`](Self::commit) (the in-memory store); the consumer retries
    /// a conflict and then sees the duplicate.
    ///
    /// # Errors
    ///
    /// [`InboxError::Conflict`] when a concurrent transaction marks the same
    /// event (see above); [`InboxError::Unavailable`] when the database cannot
    /// be reached; [`InboxError::Schema`] when the inbox table is missing;
    /// [`InboxError::Backend`] for any other database error.
    fn mark(
        &self,
        tx: &mut Self::Tx,
        key: InboxKey<'_>,
    ) -> impl Future<Output = Result<InboxMark, InboxError>> + Send;

    /// Commits the mark and the handler's writes.
    ///
    /// # Errors
    ///
    /// [`InboxError::Conflict`] when a concurrent transaction committed the same
    /// mark or conflicting writes first; [`InboxError::Invalid`] when an event
    /// the handler staged in `tx` is refused; [`InboxError::Unavailable`] when
    /// the database cannot be reached; [`InboxError::Backend`] for any other
    /// database error. Nothing of the transaction is applied.
    fn commit(&self, tx: Self::Tx) -> impl Future<Output = Result<(), InboxError>> + Send;

    /// Discards the mark and the handler's writes.
    ///
    /// # Errors
    ///
    /// [`InboxError::Unavailable`] when the database cannot be reached;
    /// [`InboxError::Backend`] for any other database error. The transaction's
    /// writes are discarded either way.
    fn rollback(&self, tx: Self::Tx) -> impl Future<Output = Result<(), InboxError>> + Send;

    /// Whether `error`, which a handler returned through `?` without saying
    /// whether it is transient, can never succeed on retry by this store's
    /// reading: a constraint violation or a malformed value, say, rather
    /// than a lost connection or a conflict. The consumer dead-letters such
    /// a message at once instead of redelivering it. The default reads
    /// nothing as permanent.
    fn is_permanent(&self, error: &(dyn std::error::Error + 'static)) -> bool {
        let _ = error;
        false
    }
}
