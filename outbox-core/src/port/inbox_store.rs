//! The consumer's side of a store: the inbox.

use std::future::Future;
use std::time::Duration;

use uuid::Uuid;

use super::BoxError;

/// Whether an event was seen before by a consumer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InboxMark {
    /// First time: the mark is recorded in the transaction and the handler
    /// runs.
    Fresh,
    /// Already recorded by a committed transaction: skip the handler, ack.
    Duplicate,
}

/// Records `(consumer, event_id)` inside the handler's own transaction, so
/// the handler's writes and the mark commit or roll back together.
pub trait InboxStore: Clone + Send + Sync + 'static {
    /// The open transaction the handler receives, typed by the store (for
    /// example a Postgres context).
    type Tx: Send + 'static;

    /// Opens a transaction.
    fn begin(&self) -> impl Future<Output = Result<Self::Tx, InboxError>> + Send;

    /// Records the event for the consumer within `tx`. A duplicate leaves
    /// `tx` usable.
    fn mark(
        &self,
        tx: &mut Self::Tx,
        consumer: &str,
        event_id: Uuid,
    ) -> impl Future<Output = Result<InboxMark, InboxError>> + Send;

    /// Commits the mark and the handler's writes.
    fn commit(&self, tx: Self::Tx) -> impl Future<Output = Result<(), InboxError>> + Send;

    /// Discards the mark and the handler's writes.
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

    /// Deletes up to `limit` marks of the consumer recorded at least `age`
    /// ago. Redeliveries older than the window are no longer detected.
    fn purge_older_than(
        &self,
        consumer: &str,
        age: Duration,
        limit: usize,
    ) -> impl Future<Output = Result<u64, InboxError>> + Send;
}

/// An inbox operation that failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InboxError {
    /// The database could not be reached or dropped the connection.
    #[error("inbox store unavailable")]
    Unavailable(#[source] BoxError),
    /// A concurrent transaction conflicted (for example the same event being
    /// handled by two consumers at once); retrying resolves it.
    #[error("inbox write conflict")]
    Conflict(#[source] BoxError),
    /// The inbox table or collection is missing or out of date.
    #[error("inbox schema problem: {0}")]
    Schema(String),
    /// An invalid consumer name or request.
    #[error("invalid inbox request: {0}")]
    Invalid(String),
    /// Any other backend failure.
    #[error("inbox store failed")]
    Backend(#[source] BoxError),
}

impl InboxError {
    /// Whether retrying later may succeed.
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Unavailable(_) | Self::Conflict(_))
    }
}
