use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::lifecycle::{Step, StepError, repeat};
use crate::{OutboxStore, PurgeRequest, PurgeStatus, StoreError};

/// Deletes finished rows once their retention window has passed, in
/// batches.
#[derive(Debug, Clone)]
pub struct Cleaner<S> {
    store: S,
    route: String,
    keep_published: Option<Duration>,
    keep_failed: Option<Duration>,
    interval: Duration,
    batch: usize,
}

impl<S: OutboxStore> Cleaner<S> {
    /// Default time between cleanups.
    pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(60);
    /// Default rows deleted per statement.
    pub const DEFAULT_BATCH: usize = 1000;
    /// Default retention of published rows.
    pub const DEFAULT_KEEP_PUBLISHED: Duration = Duration::from_secs(24 * 3600);

    /// A cleaner for one route that deletes published rows after a day and
    /// keeps failed rows until an operator requeues or purges them.
    pub fn new(store: S, route: impl Into<String>) -> Self {
        Self {
            store,
            route: route.into(),
            keep_published: Some(Self::DEFAULT_KEEP_PUBLISHED),
            keep_failed: None,
            interval: Self::DEFAULT_INTERVAL,
            batch: Self::DEFAULT_BATCH,
        }
    }

    /// Keeps published rows this long; `None` never deletes them.
    pub fn keep_published(mut self, keep: Option<Duration>) -> Self {
        self.keep_published = keep;
        self
    }

    /// Keeps failed rows this long; `None` (the default) never deletes them.
    pub fn keep_failed(mut self, keep: Option<Duration>) -> Self {
        self.keep_failed = keep;
        self
    }

    /// Sets the time between cleanups.
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// Sets the rows deleted per statement.
    pub fn batch(mut self, batch: usize) -> Self {
        self.batch = batch.max(1);
        self
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
            (PurgeStatus::Published, self.keep_published),
            (PurgeStatus::Failed, self.keep_failed),
        ];
        for (status, keep) in windows {
            let Some(older_than) = keep else { continue };
            let request = PurgeRequest {
                status,
                older_than,
                limit: self.batch,
            };
            loop {
                let n = self.store.purge(&self.route, request).await?;
                deleted += n;
                if n < self.batch as u64 {
                    break;
                }
            }
        }
        if deleted > 0 {
            tracing::debug!(outbox.route = %self.route, deleted, "purged finished rows");
        }
        Ok(deleted)
    }
}

impl<S: OutboxStore> Step for Cleaner<S> {
    fn run(&self, cancel: CancellationToken) -> BoxFuture<'_, Result<(), StepError>> {
        async move {
            repeat("cleaner", self.interval, &cancel, || async {
                self.clean().await.map(drop)
            })
            .await
        }
        .boxed()
    }
}
