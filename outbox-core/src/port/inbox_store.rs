//! The consumer's side of a store: the inbox, and the count of handler
//! attempts that did not commit.

use std::future::Future;
use std::time::Duration;

use uuid::Uuid;

use super::{BoxError, StoreError};

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

/// Handler attempts of one consumer on one event that did not commit, as
/// the inbox counted them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Attempts {
    /// Attempts started.
    pub started: u32,
    /// Of those, attempts that ended without a commit: the handler returned
    /// an error, timed out, or its transaction failed.
    pub finished: u32,
}

impl Attempts {
    /// Attempts that started and never ended: their process crashed or was
    /// killed while the handler ran.
    pub fn unfinished(&self) -> u32 {
        self.started.saturating_sub(self.finished)
    }
}

/// Records `(consumer, event_id)` inside the handler's own transaction, so
/// the handler's writes and the mark commit or roll back together, and
/// counts the handler's attempts that did not commit.
///
/// # Attempts
///
/// A broker's delivery count says how often a message left the broker, not
/// how often a handler ran on it: a consumer process that dies returns its
/// whole prefetch window, and every message in it comes back counted once
/// more, though most never reached a handler. Parking on that count takes a
/// crashing message's innocent neighbours to the dead-letter queue with it.
///
/// The inbox store therefore counts attempts where they happen, per
/// consumer and event: [`InboxStore::start_attempt`] counts a start in a
/// write committed on its own, before the handler's transaction opens, so
/// the count outlives a crash of the handler's process;
/// [`InboxStore::finish_attempt`] counts an attempt that ended without a
/// commit (the handler returned an error); and
/// [`InboxStore::clear_attempts`] deletes the count inside the handler's
/// transaction, so it goes when the handler's work commits. Attempts started
/// and never finished are those whose process died; the consumer reads them
/// with [`InboxStore::attempts`] before a redelivery starts, and runs one
/// with such an attempt behind it alone.
///
/// Counting costs a committed write, so the consumer counts a start only
/// for a delivery the broker says may have been seen before (a delivery
/// count above 1, or none known). A first delivery costs nothing extra; if
/// it fails, its start is counted with its end, on the failure path. Only a
/// first delivery whose process dies goes uncounted, so a message's handler
/// runs at most `max_deliveries` counted times plus that one.
pub trait InboxStore: Clone + Send + Sync + 'static {
    /// The open transaction the handler receives, typed by the store (for
    /// example a Postgres context).
    type Tx: Send + 'static;

    /// Opens a transaction.
    ///
    /// # Errors
    ///
    /// [`InboxError::Unavailable`] when the database cannot be reached;
    /// [`InboxError::Misconfigured`] when the store's settings do not fit the
    /// server; [`InboxError::Backend`] for any other database error.
    fn begin(&self) -> impl Future<Output = Result<Self::Tx, InboxError>> + Send;

    /// Records the event for the consumer within `tx`. A duplicate leaves
    /// `tx` usable.
    ///
    /// Of transactions marking one event for one consumer at once, one
    /// commits. Each other either learns [`InboxMark::Duplicate`] (a store
    /// may make it wait for the first to end, as PostgreSQL does) or fails
    /// with a transient [`InboxError::Conflict`], here (MongoDB) or at
    /// [`commit`](Self::commit) (the in-memory store); the consumer retries
    /// a conflict and then sees the duplicate. The inbox conformance suite
    /// of `tidings-testing` holds every store to this.
    ///
    /// # Errors
    ///
    /// [`InboxError::Invalid`] when `consumer` is not a legal name;
    /// [`InboxError::Conflict`] when a concurrent transaction marks the same
    /// event (see above); [`InboxError::Unavailable`] when the database cannot
    /// be reached; [`InboxError::Schema`] when the inbox table is missing;
    /// [`InboxError::Backend`] for any other database error.
    fn mark(
        &self,
        tx: &mut Self::Tx,
        consumer: &str,
        event_id: Uuid,
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

    /// Counts an attempt of `consumer`'s handler starting on `event_id`, in
    /// a write committed at once, apart from any handler transaction, so the
    /// count survives the handler's process dying. Returns the attempts
    /// counted so far, this one included, or `None` from a store that does
    /// not count attempts (the consumer then parks on the broker's count).
    ///
    /// # Errors
    ///
    /// [`InboxError::Invalid`] when `consumer` is not a legal name;
    /// [`InboxError::Conflict`] when a concurrent write of the same count
    /// conflicts; [`InboxError::Unavailable`] when the database cannot be
    /// reached; [`InboxError::Schema`] when the attempts table is missing;
    /// [`InboxError::Backend`] for any other database error.
    fn start_attempt(
        &self,
        consumer: &str,
        event_id: Uuid,
    ) -> impl Future<Output = Result<Option<Attempts>, InboxError>> + Send;

    /// The attempts counted so far on `event_id`, counting none: zero where
    /// none were, or `None` from a store that does not count attempts. The
    /// consumer reads them before a redelivery's start, to run a message
    /// whose handler was running when its process died alone.
    ///
    /// # Errors
    ///
    /// [`InboxError::Invalid`] when `consumer` is not a legal name;
    /// [`InboxError::Unavailable`] when the database cannot be reached;
    /// [`InboxError::Schema`] when the attempts table is missing;
    /// [`InboxError::Backend`] for any other database error.
    fn attempts(
        &self,
        consumer: &str,
        event_id: Uuid,
    ) -> impl Future<Output = Result<Option<Attempts>, InboxError>> + Send;

    /// Counts an attempt on `event_id` that ended without a commit, in a
    /// write committed at once. `start_counted` says whether
    /// [`start_attempt`](Self::start_attempt) counted its start; when it
    /// did not (a first delivery), the start is counted now as well.
    ///
    /// # Errors
    ///
    /// [`InboxError::Invalid`] when `consumer` is not a legal name;
    /// [`InboxError::Conflict`] when a concurrent write of the same count
    /// conflicts; [`InboxError::Unavailable`] when the database cannot be
    /// reached; [`InboxError::Schema`] when the attempts table is missing;
    /// [`InboxError::Backend`] for any other database error.
    fn finish_attempt(
        &self,
        consumer: &str,
        event_id: Uuid,
        start_counted: bool,
    ) -> impl Future<Output = Result<(), InboxError>> + Send;

    /// Deletes the attempts counted for `event_id` within `tx`, so the count
    /// goes when the handler's work commits and stays if it rolls back.
    /// Called only for events with a counted start, so a first delivery
    /// pays nothing.
    ///
    /// # Errors
    ///
    /// [`InboxError::Invalid`] when `consumer` is not a legal name;
    /// [`InboxError::Conflict`] when a concurrent write of the same count
    /// conflicts; [`InboxError::Unavailable`] when the database cannot be
    /// reached; [`InboxError::Schema`] when the attempts table is missing;
    /// [`InboxError::Backend`] for any other database error.
    fn clear_attempts(
        &self,
        tx: &mut Self::Tx,
        consumer: &str,
        event_id: Uuid,
    ) -> impl Future<Output = Result<(), InboxError>> + Send;

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
    /// ago, and up to `limit` of its attempt counts last written at least
    /// `age` ago (those of events that were parked or never came back);
    /// returns how many of both went. Redeliveries older than the window
    /// are no longer detected.
    ///
    /// # Errors
    ///
    /// [`InboxError::Invalid`] when `consumer` is not a legal name;
    /// [`InboxError::Unavailable`] when the database cannot be reached;
    /// [`InboxError::Schema`] when the inbox or attempts table is missing;
    /// [`InboxError::Backend`] for any other database error.
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
    /// The store's settings do not fit the server it reaches; the message
    /// names the setting that fixes it.
    #[error("inbox store misconfigured: {0}")]
    Misconfigured(String),
    /// Any other backend failure.
    #[error("inbox store failed")]
    Backend(#[source] BoxError),
}

/// A store's error restated for the inbox, where an inbox store works
/// through its outbox store (its transactions, its sessions).
impl From<StoreError> for InboxError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Unavailable(e) => Self::Unavailable(e),
            StoreError::Timeout => Self::Unavailable("operation timed out".into()),
            StoreError::Conflict(e) => Self::Conflict(e),
            StoreError::Schema(s) => Self::Schema(s),
            StoreError::Invalid(s) => Self::Invalid(s),
            StoreError::Misconfigured(s) => Self::Misconfigured(s),
            other => Self::Backend(other.into()),
        }
    }
}

impl InboxError {
    /// Whether retrying later may succeed.
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Unavailable(_) | Self::Conflict(_))
    }

    /// Refuses a consumer name that is not a legal name (see
    /// [`validate_name`](crate::spec::validate_name)), as every inbox store
    /// does before it touches its data.
    ///
    /// # Errors
    ///
    /// [`InboxError::Invalid`] when `consumer` is empty, longer than
    /// [`MAX_NAME_LEN`](crate::spec::MAX_NAME_LEN) bytes or holds a character
    /// outside `[A-Za-z0-9._-]`.
    ///
    /// ```
    /// use tidings_core::InboxError;
    ///
    /// assert!(InboxError::check_consumer("billing").is_ok());
    /// assert!(matches!(InboxError::check_consumer("billing'; --"), Err(InboxError::Invalid(_))));
    /// ```
    pub fn check_consumer(consumer: &str) -> Result<(), Self> {
        crate::spec::validate_name("consumer", consumer).map_err(|e| Self::Invalid(e.to_string()))
    }
}
