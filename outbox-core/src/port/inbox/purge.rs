//! Inbox retention: deleting marks older than a window.

use std::future::Future;
use std::time::Duration;

use super::{ConsumerName, InboxError, InboxStore};

/// Deletes a consumer's old marks and attempt counts, for the inbox
/// cleaner.
pub trait InboxPurge: InboxStore {
    /// Deletes up to `limit` marks of the consumer recorded at least `age`
    /// ago, and up to `limit` of its attempt counts last written at least
    /// `age` ago (those of events that were parked or never came back);
    /// returns how many of both went. Redeliveries older than the window
    /// are no longer detected.
    ///
    /// # Errors
    ///
    /// [`InboxError::Unavailable`] when the database cannot be reached;
    /// [`InboxError::Schema`] when the inbox or attempts table is missing;
    /// [`InboxError::Backend`] for any other database error.
    fn purge_older_than(
        &self,
        consumer: &ConsumerName,
        age: Duration,
        limit: usize,
    ) -> impl Future<Output = Result<u64, InboxError>> + Send;
}
