//! The count of a consumer's handler attempts that did not commit.

use std::future::Future;

use super::{InboxError, InboxKey, InboxStore};

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

/// Counts the handler's attempts on an event that did not commit, so a
/// message that keeps failing, or keeps killing its process, is parked
/// without taking its neighbours with it.
///
/// A broker's delivery count says how often a message left the broker, not
/// how often a handler ran on it: a consumer process that dies returns its
/// whole prefetch window, and every message in it comes back counted once
/// more, though most never reached a handler. Parking on that count takes a
/// crashing message's innocent neighbours to the dead-letter queue with it.
///
/// The inbox store therefore counts attempts where they happen, per
/// consumer and event: [`start_attempt`](Self::start_attempt) counts a
/// start in a write committed on its own, before the handler's transaction
/// opens, so the count outlives a crash of the handler's process;
/// [`finish_attempt`](Self::finish_attempt) counts an attempt that ended
/// without a commit (the handler returned an error); and
/// [`clear_attempts`](Self::clear_attempts) deletes the count inside the
/// handler's transaction, so it goes when the handler's work commits.
/// Attempts started and never finished are those whose process died; the
/// consumer reads them with [`attempts`](Self::attempts) before a
/// redelivery starts, and runs one with such an attempt behind it alone.
///
/// Counting costs a committed write, so the consumer counts a start only
/// for a delivery the broker says may have been seen before (a delivery
/// count above 1, or none known). A first delivery costs nothing extra; if
/// it fails, its start is counted with its end, on the failure path. Only a
/// first delivery whose process dies goes uncounted, so a message's handler
/// runs at most `max_deliveries` counted times plus that one.
///
/// A store that counts nothing answers `None`; the consumer then parks on
/// the broker's count.
pub trait InboxAttempts: InboxStore {
    /// Counts an attempt starting on the event, in a write committed at
    /// once, apart from any handler transaction, so the count survives the
    /// handler's process dying. Returns the attempts counted so far, this
    /// one included, or `None` from a store that does not count attempts.
    ///
    /// # Errors
    ///
    /// [`InboxError::Conflict`] when a concurrent write of the same count
    /// conflicts; [`InboxError::Unavailable`] when the database cannot be
    /// reached; [`InboxError::Schema`] when the attempts table is missing;
    /// [`InboxError::Backend`] for any other database error.
    fn start_attempt(
        &self,
        key: InboxKey<'_>,
    ) -> impl Future<Output = Result<Option<Attempts>, InboxError>> + Send;

    /// The attempts counted so far on the event, counting none: zero where
    /// none were, or `None` from a store that does not count attempts. The
    /// consumer reads them before a redelivery's start, to run a message
    /// whose handler was running when its process died alone.
    ///
    /// # Errors
    ///
    /// [`InboxError::Unavailable`] when the database cannot be reached;
    /// [`InboxError::Schema`] when the attempts table is missing;
    /// [`InboxError::Backend`] for any other database error.
    fn attempts(
        &self,
        key: InboxKey<'_>,
    ) -> impl Future<Output = Result<Option<Attempts>, InboxError>> + Send;

    /// Counts an attempt on the event that ended without a commit, in a
    /// write committed at once. `start_counted` says whether
    /// [`start_attempt`](Self::start_attempt) counted its start; when it
    /// did not (a first delivery), the start is counted now as well.
    ///
    /// # Errors
    ///
    /// [`InboxError::Conflict`] when a concurrent write of the same count
    /// conflicts; [`InboxError::Unavailable`] when the database cannot be
    /// reached; [`InboxError::Schema`] when the attempts table is missing;
    /// [`InboxError::Backend`] for any other database error.
    fn finish_attempt(
        &self,
        key: InboxKey<'_>,
        start_counted: bool,
    ) -> impl Future<Output = Result<(), InboxError>> + Send;

    /// Deletes the attempts counted for the event within `tx`, so the count
    /// goes when the handler's work commits and stays if it rolls back.
    /// Called only for events with a counted start, so a first delivery
    /// pays nothing.
    ///
    /// # Errors
    ///
    /// [`InboxError::Conflict`] when a concurrent write of the same count
    /// conflicts; [`InboxError::Unavailable`] when the database cannot be
    /// reached; [`InboxError::Schema`] when the attempts table is missing;
    /// [`InboxError::Backend`] for any other database error.
    fn clear_attempts(
        &self,
        tx: &mut Self::Tx,
        key: InboxKey<'_>,
    ) -> impl Future<Output = Result<(), InboxError>> + Send;
}
