//! Inbox retention as a lifecycle step.

use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use tidings_core::lifecycle::{Step, StepError, repeat};
use tidings_core::{InboxError, InboxStore};
use tokio_util::sync::CancellationToken;

/// Deletes one consumer's inbox marks older than a window, in batches.
///
/// A redelivery that arrives after its mark was deleted runs the handler
/// again, so keep marks longer than the broker can hold a message.
#[derive(Debug, Clone)]
pub struct InboxCleaner<S> {
    store: S,
    consumer: String,
    keep: Duration,
    interval: Duration,
    batch: usize,
}

impl<S: InboxStore> InboxCleaner<S> {
    /// Default retention of marks: 7 days.
    pub const DEFAULT_KEEP: Duration = Duration::from_secs(7 * 24 * 3600);
    /// Default time between cleanups.
    pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(300);
    /// Default marks deleted per statement.
    pub const DEFAULT_BATCH: usize = 1000;

    /// A cleaner for one consumer's marks.
    pub fn new(store: S, consumer: impl Into<String>) -> Self {
        Self {
            store,
            consumer: consumer.into(),
            keep: Self::DEFAULT_KEEP,
            interval: Self::DEFAULT_INTERVAL,
            batch: Self::DEFAULT_BATCH,
        }
    }

    /// Sets how long marks are kept.
    pub fn keep(mut self, keep: Duration) -> Self {
        self.keep = keep;
        self
    }

    /// Sets the time between cleanups.
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// Sets the marks deleted per statement.
    pub fn batch(mut self, batch: usize) -> Self {
        self.batch = batch.max(1);
        self
    }

    /// One cleanup, batch after batch; returns how many marks went.
    ///
    /// # Errors
    ///
    /// The [`InboxError`] of the first purge that fails:
    /// [`InboxError::Unavailable`] when the database cannot be reached,
    /// [`InboxError::Schema`] when the inbox or attempts table is missing,
    /// [`InboxError::Backend`] for any other database error. Marks deleted
    /// before it stay deleted.
    pub async fn clean(&self) -> Result<u64, InboxError> {
        let mut deleted = 0;
        loop {
            let n = self
                .store
                .purge_older_than(&self.consumer, self.keep, self.batch)
                .await?;
            deleted += n;
            if n < self.batch as u64 {
                return Ok(deleted);
            }
        }
    }
}

impl<S: InboxStore> Step for InboxCleaner<S> {
    fn run(&self, cancel: CancellationToken) -> BoxFuture<'_, Result<(), StepError>> {
        async move {
            repeat("inbox cleaner", self.interval, &cancel, || async {
                let deleted = self.clean().await?;
                if deleted > 0 {
                    tracing::debug!(consumer = %self.consumer, deleted, "purged inbox marks");
                }
                Ok::<_, InboxError>(())
            })
            .await
        }
        .boxed()
    }
}
