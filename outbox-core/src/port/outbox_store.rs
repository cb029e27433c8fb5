//! The relay's side of an outbox store.

use std::future::Future;
use std::time::Duration;

use uuid::Uuid;

use super::{BoxError, ClaimCursor, ClaimedRows};
use crate::{Envelope, Route};

/// Identifies one claim. Every mark made under a claim is conditional on the
/// rows still carrying its token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LeaseToken(pub Uuid);

impl LeaseToken {
    /// A fresh random token.
    pub fn new() -> Self {
        Self(Uuid::new_v4())
    }
}

impl Default for LeaseToken {
    fn default() -> Self {
        Self::new()
    }
}

/// A claimed row as the relay sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxRecord {
    /// The event; its `attempts` equals `attempts_started`.
    pub envelope: Envelope,
    /// Claims of this row so far, this one included.
    pub attempts_started: u32,
    /// Claims that were settled (published, rescheduled or failed).
    pub attempts_finished: u32,
    /// Why the previous attempt failed.
    pub last_error: Option<String>,
}

impl OutboxRecord {
    /// Earlier claims that never settled: the relay holding them died or
    /// lost its lease mid-publish.
    pub fn crashes(&self) -> u32 {
        self.attempts_started
            .saturating_sub(1)
            .saturating_sub(self.attempts_finished)
    }
}

/// What to claim.
#[derive(Debug, Clone, Copy)]
pub struct ClaimRequest<'a> {
    /// The outbox route, its ordering mode included.
    pub route: &'a Route,
    /// At most this many rows.
    pub limit: usize,
    /// How long the claim holds before a sweep may take the rows back.
    pub lease: Duration,
    /// Where the claim may start: past this position, the
    /// [`cursor`](ClaimedBatch::cursor) of the same drain's last batch. A
    /// store takes only rows past it, or ignores it; `None` claims from
    /// the oldest row.
    pub after: Option<ClaimCursor>,
}

/// How one claimed row ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The broker accepted it.
    Published,
    /// Publish again after `delay`, invisible to claims until then.
    Retry {
        /// How long the row stays invisible.
        delay: Duration,
        /// Why this attempt failed.
        error: String,
    },
    /// Never publish again (until requeued).
    Failed {
        /// Why.
        reason: String,
    },
}

/// The outcome of one row of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settlement {
    /// The row's event id.
    pub event_id: Uuid,
    /// How it ended.
    pub outcome: Outcome,
}

/// What settling a batch did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SettleReport {
    /// Rows marked published.
    pub published: usize,
    /// Rows rescheduled.
    pub rescheduled: usize,
    /// Rows marked failed.
    pub failed: usize,
    /// Rows whose lease was lost (swept and possibly claimed again): the
    /// mark was refused and changed nothing.
    pub lost: Vec<Uuid>,
}

/// A batch claimed by a relay, settled once.
///
/// A store may hand out leased batches (the claim is committed with a lease
/// token and expiry, settling writes under that token) or locked ones (the
/// rows stay locked in an open transaction that settling commits). The relay
/// does not care which.
pub trait ClaimedBatch: Send + 'static {
    /// What the claim took.
    fn rows(&self) -> &ClaimedRows;

    /// What the claim took, to take the records out of.
    fn rows_mut(&mut self) -> &mut ClaimedRows;

    /// The claim's token.
    fn lease(&self) -> LeaseToken {
        self.rows().lease
    }

    /// The claimed rows, oldest first.
    fn records(&self) -> &[OutboxRecord] {
        &self.rows().records
    }

    /// Takes the claimed rows out of the batch, oldest first, so they can
    /// be published without a copy; [`records`](Self::records) is empty
    /// afterwards, and the batch still settles them.
    fn take_records(&mut self) -> Vec<OutboxRecord> {
        std::mem::take(&mut self.rows_mut().records)
    }

    /// Where a claim going on from this one may start
    /// ([`ClaimRequest::after`]): past this batch's last row, where the
    /// store can start a claim there. `None` where it cannot, or where the
    /// batch is empty.
    fn cursor(&self) -> Option<ClaimCursor> {
        self.rows().cursor
    }

    /// Applies the outcomes in as few round trips as the store can, each
    /// fenced on the lease. Rows without an outcome stay claimed until the
    /// lease expires (a leased batch) or are released untouched (a locked
    /// one, whose transaction commits).
    ///
    /// # Errors
    ///
    /// [`StoreError::Unavailable`] or [`StoreError::Timeout`] when the database
    /// cannot be reached in time; [`StoreError::Conflict`] when a concurrent
    /// transaction conflicts (a locked batch whose transaction the server ended
    /// past its lease, say); [`StoreError::Backend`] for any other database
    /// error. A mark refused because the lease was lost is no error: it is
    /// reported in [`SettleReport::lost`].
    fn settle(
        self,
        settlements: Vec<Settlement>,
    ) -> impl Future<Output = Result<SettleReport, StoreError>> + Send;
}

/// Which failed rows to requeue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requeue {
    /// These events.
    Ids(Vec<Uuid>),
    /// Every failed row of the route.
    All,
}

/// Which finished rows [`OutboxStore::purge`] deletes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PurgeStatus {
    /// Published rows kept for a retention window.
    Published,
    /// Failed rows.
    Failed,
}

/// A purge of finished rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PurgeRequest {
    /// Which rows.
    pub status: PurgeStatus,
    /// Only rows finished at least this long ago.
    pub older_than: Duration,
    /// At most this many rows per call.
    pub limit: usize,
}

/// A snapshot of one route's outbox.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OutboxStats {
    /// Rows waiting to be claimed, scheduled retries included.
    pub pending: u64,
    /// Rows claimed and not yet settled.
    pub in_flight: u64,
    /// Rows failed for good.
    pub failed: u64,
    /// Published rows still retained.
    pub published: u64,
    /// Age of the oldest pending row.
    pub oldest_pending_age: Option<Duration>,
}

/// The relay's side of an outbox store.
pub trait OutboxStore: Clone + Send + Sync + 'static {
    /// A claimed batch.
    type Batch: ClaimedBatch;

    /// Claims up to `limit` claimable rows of the route, oldest first (in
    /// hybrid-clock order where the route asks), stamping a fresh lease. With
    /// [`OrderingMode::PerKey`](crate::OrderingMode::PerKey) it claims only
    /// the oldest unfinished row of a key, and none while a row of that key
    /// is in flight; which keys a claim serves first is the store's to
    /// choose, as long as every key gets its turn. An empty batch means
    /// nothing is claimable.
    ///
    /// # Errors
    ///
    /// [`StoreError::Unavailable`] or [`StoreError::Timeout`] when the database
    /// cannot be reached in time; [`StoreError::Conflict`] when a concurrent
    /// claim conflicts; [`StoreError::Schema`] when the outbox table or an index
    /// it needs is missing; [`StoreError::Corrupt`] when a claimed row cannot be
    /// read (the store fails it in place, so the next claim goes past it);
    /// [`StoreError::Misconfigured`] when the store's settings do not fit the
    /// server; [`StoreError::Backend`] for any other database error.
    fn claim(
        &self,
        request: ClaimRequest<'_>,
    ) -> impl Future<Output = Result<Self::Batch, StoreError>> + Send;

    /// Returns up to `limit` rows whose lease expired to pending, where they
    /// are claimable at once. The crash stays counted (attempts started
    /// exceed attempts finished). A store whose claims hold rows by locks
    /// in an open transaction, released when a relay dies, counts the crash
    /// of each such claim here instead; the result counts both.
    ///
    /// # Errors
    ///
    /// [`StoreError::Unavailable`] or [`StoreError::Timeout`] when the database
    /// cannot be reached in time; [`StoreError::Conflict`] when a concurrent
    /// transaction conflicts; [`StoreError::Schema`] when the outbox table is
    /// missing; [`StoreError::Backend`] for any other database error.
    fn sweep_expired(
        &self,
        route: &str,
        limit: usize,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;

    /// Moves failed rows back to pending with fresh attempt counters.
    ///
    /// # Errors
    ///
    /// [`StoreError::Unavailable`] or [`StoreError::Timeout`] when the database
    /// cannot be reached in time; [`StoreError::Conflict`] when a concurrent
    /// transaction conflicts; [`StoreError::Schema`] when the outbox table is
    /// missing; [`StoreError::Backend`] for any other database error.
    fn requeue_failed(
        &self,
        route: &str,
        which: Requeue,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;

    /// Deletes the failed rows of `route` among `ids`, and only those: a
    /// pending, in-flight or published row named is left alone. Returns how
    /// many went; an empty `ids` deletes nothing.
    ///
    /// # Errors
    ///
    /// [`StoreError::Unavailable`] or [`StoreError::Timeout`] when the database
    /// cannot be reached in time; [`StoreError::Conflict`] when a concurrent
    /// transaction conflicts; [`StoreError::Schema`] when the outbox table is
    /// missing; [`StoreError::Backend`] for any other database error.
    fn delete_failed(
        &self,
        route: &str,
        ids: &[Uuid],
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;

    /// Deletes finished rows.
    ///
    /// # Errors
    ///
    /// [`StoreError::Unavailable`] or [`StoreError::Timeout`] when the database
    /// cannot be reached in time; [`StoreError::Conflict`] when a concurrent
    /// transaction conflicts; [`StoreError::Schema`] when the outbox table is
    /// missing; [`StoreError::Backend`] for any other database error.
    fn purge(
        &self,
        route: &str,
        request: PurgeRequest,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;

    /// Depth, in-flight, failed and retained counts and the oldest pending
    /// age of a route.
    ///
    /// # Errors
    ///
    /// [`StoreError::Unavailable`] or [`StoreError::Timeout`] when the database
    /// cannot be reached in time; [`StoreError::Schema`] when the outbox table
    /// is missing; [`StoreError::Backend`] for any other database error.
    fn stats(&self, route: &str) -> impl Future<Output = Result<OutboxStats, StoreError>> + Send;
}

/// An outbox store operation that failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database could not be reached or dropped the connection.
    #[error("outbox store unavailable")]
    Unavailable(#[source] BoxError),
    /// The operation did not finish in time.
    #[error("outbox store operation timed out")]
    Timeout,
    /// A concurrent transaction conflicted; retrying may succeed.
    #[error("outbox store write conflict")]
    Conflict(#[source] BoxError),
    /// The table, collection or index the store needs is missing or out of
    /// date.
    #[error("outbox schema problem: {0}")]
    Schema(String),
    /// A stored row cannot be read back.
    #[error("outbox row {event_id} is corrupt: {reason}")]
    Corrupt {
        /// The row's event id, nil where unreadable.
        event_id: Uuid,
        /// What is wrong with it.
        reason: String,
    },
    /// A request the store cannot serve (for example a hostile name).
    #[error("invalid outbox request: {0}")]
    Invalid(String),
    /// The store's settings do not fit the server it reaches (for example
    /// statements prepared by name behind a pooler that keeps none); the
    /// message names the setting that fixes it.
    #[error("outbox store misconfigured: {0}")]
    Misconfigured(String),
    /// Any other backend failure.
    #[error("outbox store failed")]
    Backend(#[source] BoxError),
}

impl StoreError {
    /// Whether retrying the same operation later may succeed.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Self::Unavailable(_) | Self::Timeout | Self::Conflict(_)
        )
    }

    /// Whether a relay goes on after this error: a transient one, or a row
    /// that could not be read, which the store failed in place and keeps for
    /// repair, so that the next claim goes past it.
    ///
    /// ```
    /// use tidings_core::StoreError;
    ///
    /// let corrupt = StoreError::Corrupt {
    ///     event_id: uuid::Uuid::nil(),
    ///     reason: "headers are not a JSON object of strings".into(),
    /// };
    /// assert!(!corrupt.is_transient());
    /// assert!(corrupt.is_recoverable());
    /// assert!(!StoreError::Schema("no outbox table".into()).is_recoverable());
    /// ```
    pub fn is_recoverable(&self) -> bool {
        self.is_transient() || matches!(self, Self::Corrupt { .. })
    }
}
