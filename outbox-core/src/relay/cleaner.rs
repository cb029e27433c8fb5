use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::lifecycle::{Step, StepError, purge_in_batches, repeat};
use crate::{OutboxStore, PurgeRequest, PurgeStatus, StoreError};

/// Deletes finished rows once their retention window has passed, in
/// batches.
///
/// ```
/// use std::time::Duration;
/// use tidings_core::memory::MemoryStore;
/// use tidings_core::relay::{Cleaner, CleanerOptions};
///
/// let cleaner = Cleaner::new(MemoryStore::new(), "order-events")
///     .options(CleanerOptions::new().keep_failed(Duration::from_secs(30 * 24 * 3600)));
/// assert_eq!(cleaner.get_options().get_keep_published(), Some(CleanerOptions::DEFAULT_KEEP_PUBLISHED));
/// ```
#[derive(Debug, Clone)]
pub struct Cleaner<S> {
    store: S,
    route: String,
    options: CleanerOptions,
}

/// Settings of a [`Cleaner`]: how long finished rows are kept, and how
/// often and how many at a time they are deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CleanerOptions {
    keep_published: Option<Duration>,
    keep_failed: Option<Duration>,
    interval: Duration,
    batch: usize,
}

impl CleanerOptions {
    /// Default [`keep_published`](Self::keep_published): a day.
    pub const DEFAULT_KEEP_PUBLISHED: Duration = Duration::from_secs(24 * 3600);
    /// Default [`interval`](Self::interval): a minute.
    pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(60);
    /// Default [`batch`](Self::batch): 1,000 rows.
    pub const DEFAULT_BATCH: usize = 1000;

    /// The defaults: published rows deleted after a day, failed rows kept
    /// until an operator requeues or purges them.
    pub fn new() -> Self {
        Self::default()
    }
}

crate::settings!(CleanerOptions {
    /// Keeps published rows this long; `None` never deletes them. Default
    /// [`DEFAULT_KEEP_PUBLISHED`](Self::DEFAULT_KEEP_PUBLISHED).
    keep_published(keep: impl Into<Option<Duration>>) = keep.into(),
        get_keep_published: Option<Duration>;
    /// Keeps failed rows this long; `None`, the default, never deletes
    /// them.
    keep_failed(keep: impl Into<Option<Duration>>) = keep.into(), get_keep_failed: Option<Duration>;
    /// The time between cleanups; default
    /// [`DEFAULT_INTERVAL`](Self::DEFAULT_INTERVAL).
    interval(interval: Duration), get_interval: Duration;
    /// The rows deleted per statement (at least 1); default
    /// [`DEFAULT_BATCH`](Self::DEFAULT_BATCH).
    batch(batch: usize) = batch.max(1), get_batch: usize;
});

impl Default for CleanerOptions {
    fn default() -> Self {
        Self {
            keep_published: Some(Self::DEFAULT_KEEP_PUBLISHED),
            keep_failed: None,
            interval: Self::DEFAULT_INTERVAL,
            batch: Self::DEFAULT_BATCH,
        }
    }
}

impl<S: OutboxStore> Cleaner<S> {
    /// A cleaner for one route, with [`CleanerOptions::default`].
    pub fn new(store: S, route: impl Into<String>) -> Self {
        Self {
            store,
            route: route.into(),
            options: CleanerOptions::default(),
        }
    }

    /// Sets the options.
    pub fn options(mut self, options: CleanerOptions) -> Self {
        self.options = options;
        self
    }

    /// The options.
    pub fn get_options(&self) -> &CleanerOptions {
        &self.options
    }

    /// One cleanup; returns how many rows were deleted.
    ///
    /// # Errors
    ///
    /// The [`StoreError`] of the first purge that fails:
    /// [`StoreError::Unavailable`] or [`StoreError::Timeout`] when the database
    /// cannot be reached in time, [`StoreError::Schema`] when the outbox table
    /// is missing, [`StoreError::Backend`] for any other database error. Rows
    /// deleted before it stay deleted.
    pub async fn clean(&self) -> Result<u64, StoreError> {
        let mut deleted = 0;
        let windows = [
            (PurgeStatus::Published, self.options.keep_published),
            (PurgeStatus::Failed, self.options.keep_failed),
        ];
        for (status, keep) in windows {
            let Some(older_than) = keep else { continue };
            deleted += purge_in_batches(self.options.batch, |limit| {
                let request = PurgeRequest {
                    status,
                    older_than,
                    limit,
                };
                self.store.purge(&self.route, request)
            })
            .await?;
        }
        if deleted > 0 {
            tracing::debug!(outbox.route = %self.route, deleted, "purged finished rows");
        }
        Ok(deleted)
    }
}

impl<S: OutboxStore> Step for Cleaner<S> {
    fn run(&self, cancel: CancellationToken) -> BoxFuture<'_, Result<(), StepError>> {
        repeat("cleaner", self.options.interval, cancel, || self.clean()).boxed()
    }
}
