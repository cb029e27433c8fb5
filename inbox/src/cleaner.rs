//! Inbox retention as a lifecycle step.

use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use tidings_core::lifecycle::{Step, StepError, purge_in_batches, repeat};
use tidings_core::{ConsumerName, InboxError, InboxPurge, SpecError};
use tokio_util::sync::CancellationToken;

/// Deletes one consumer's inbox marks older than a window, in batches.
///
/// A redelivery that arrives after its mark was deleted runs the handler
/// again, so keep marks longer than the broker can hold a message.
///
/// ```
/// use std::time::Duration;
/// use tidings_core::memory::MemoryStore;
/// use tidings_inbox::{InboxCleaner, InboxCleanerOptions};
///
/// let cleaner = InboxCleaner::new(MemoryStore::new(), "billing")?
///     .options(InboxCleanerOptions::new().keep(Duration::from_secs(14 * 24 * 3600)));
/// assert_eq!(cleaner.get_options().get_interval(), InboxCleanerOptions::DEFAULT_INTERVAL);
/// # Ok::<(), tidings_core::SpecError>(())
/// ```
#[derive(Debug, Clone)]
pub struct InboxCleaner<S> {
    store: S,
    consumer: ConsumerName,
    options: InboxCleanerOptions,
}

/// Settings of an [`InboxCleaner`]: how long marks are kept, and how often
/// and how many at a time they are deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InboxCleanerOptions {
    keep: Duration,
    interval: Duration,
    batch: usize,
}

impl InboxCleanerOptions {
    /// Default [`keep`](Self::keep): 7 days.
    pub const DEFAULT_KEEP: Duration = Duration::from_secs(7 * 24 * 3600);
    /// Default [`interval`](Self::interval): 5 minutes.
    pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(300);
    /// Default [`batch`](Self::batch): 1,000 marks.
    pub const DEFAULT_BATCH: usize = 1000;

    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }
}

tidings_core::settings!(InboxCleanerOptions {
    /// How long marks (and attempt counts) are kept; default
    /// [`DEFAULT_KEEP`](Self::DEFAULT_KEEP).
    keep(keep: Duration), get_keep: Duration;
    /// The time between cleanups; default
    /// [`DEFAULT_INTERVAL`](Self::DEFAULT_INTERVAL).
    interval(interval: Duration), get_interval: Duration;
    /// The marks deleted per statement (at least 1); default
    /// [`DEFAULT_BATCH`](Self::DEFAULT_BATCH).
    batch(batch: usize) = batch.max(1), get_batch: usize;
});

impl Default for InboxCleanerOptions {
    fn default() -> Self {
        Self {
            keep: Self::DEFAULT_KEEP,
            interval: Self::DEFAULT_INTERVAL,
            batch: Self::DEFAULT_BATCH,
        }
    }
}

impl<S: InboxPurge> InboxCleaner<S> {
    /// A cleaner for one consumer's marks, and those its give-up hook
    /// files ([`ConsumerName::given_up`]), with
    /// [`InboxCleanerOptions::default`].
    ///
    /// # Errors
    ///
    /// [`SpecError::EmptyName`], [`SpecError::NameTooLong`] or
    /// [`SpecError::IllegalName`] when `consumer` is not a legal name.
    pub fn new(store: S, consumer: impl Into<String>) -> Result<Self, SpecError> {
        Ok(Self {
            store,
            consumer: ConsumerName::new(consumer)?,
            options: InboxCleanerOptions::default(),
        })
    }

    /// Sets the options.
    pub fn options(mut self, options: InboxCleanerOptions) -> Self {
        self.options = options;
        self
    }

    /// The options.
    pub fn get_options(&self) -> &InboxCleanerOptions {
        &self.options
    }

    /// One cleanup, batch after batch, of the consumer's marks and then of
    /// its give-up hook's; returns how many marks went.
    ///
    /// # Errors
    ///
    /// The [`InboxError`] of the first purge that fails:
    /// [`InboxError::Unavailable`] when the database cannot be reached,
    /// [`InboxError::Schema`] when the inbox or attempts table is missing,
    /// [`InboxError::Backend`] for any other database error. Marks deleted
    /// before it stay deleted.
    #[tracing::instrument(skip_all, fields(messaging.consumer.group.name = %self.consumer), err)]
    pub async fn clean(&self) -> Result<u64, InboxError> {
        let mut deleted = 0;
        // The consumer's marks, then those of its give-up hook.
        for consumer in [&self.consumer, &self.consumer.given_up()] {
            let keep = self.options.keep;
            let purged = purge_in_batches(self.options.batch, |limit| {
                self.store.purge_older_than(consumer, keep, limit)
            })
            .await?;
            if purged > 0 {
                tracing::debug!(consumer = %consumer, deleted = purged, "purged inbox marks");
            }
            deleted += purged;
        }
        Ok(deleted)
    }
}

impl<S: InboxPurge> Step for InboxCleaner<S> {
    fn run(&self, cancel: CancellationToken) -> BoxFuture<'_, Result<(), StepError>> {
        repeat("inbox cleaner", self.options.interval, cancel, || {
            self.clean()
        })
        .boxed()
    }
}
