//! The change-stream wake-up: inserts into the outbox wake the relay.

use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use mongodb::Collection;
use mongodb::bson::Document;
use mongodb::change_stream::event::ResumeToken;
use mongodb::error::Error as MongoError;
use tidings_core::lifecycle::{Step, StepError};
use tidings_core::{Backoff, Wakeup};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::error::{change_streams_unsupported, resume_point_lost};
use crate::filters;

/// Watches the outbox collection's change stream and calls
/// [`Wakeup::wake`] on every insert, so a relay claims within milliseconds
/// of a commit.
///
/// A hint only. After an error the stream is opened again with backoff,
/// resuming after the last event seen, and the relay is woken, since inserts
/// may have gone unannounced meanwhile. Where the server has no change
/// streams (a standalone server) the watcher says so once at `info` and
/// looks again every [`unsupported_recheck`](Self::unsupported_recheck);
/// the relay's polling floor delivers meanwhile. No error ever leaves the
/// watcher.
#[derive(Debug)]
pub struct MongoWakeupSource {
    collection: Collection<Document>,
    wakeup: Wakeup,
    reconnect_backoff: Backoff,
    unsupported_recheck: Duration,
}

/// Why a watching session ended.
enum Ended {
    Cancelled,
    Lost(MongoError),
    Unsupported(MongoError),
}

impl MongoWakeupSource {
    /// Default [`reconnect_backoff`](Self::reconnect_backoff): 100 ms, doubling up
    /// to 5 s.
    pub const DEFAULT_RECONNECT_BACKOFF: Backoff =
        Backoff::new(Duration::from_millis(100), Duration::from_secs(5));
    /// Default pause before trying again on a server without change
    /// streams.
    pub const DEFAULT_UNSUPPORTED_RECHECK: Duration = Duration::from_secs(60);

    /// A watcher on `collection`. Usually made by
    /// [`MongoOutboxStore::wakeup_source`](crate::MongoOutboxStore::wakeup_source).
    pub fn new(collection: Collection<Document>, wakeup: Wakeup) -> Self {
        Self {
            collection,
            wakeup,
            reconnect_backoff: Self::DEFAULT_RECONNECT_BACKOFF,
            unsupported_recheck: Self::DEFAULT_UNSUPPORTED_RECHECK,
        }
    }

    /// Runs [`watch`](Self::watch) on a new task.
    pub fn spawn(self, cancel: CancellationToken) -> JoinHandle<()> {
        tokio::spawn(async move { self.watch(cancel).await })
    }

    /// Watches until `cancel` fires, opening the stream again whenever it
    /// fails. As a lifecycle [`Step`], the watcher does the same.
    pub async fn watch(&self, cancel: CancellationToken) {
        let mut token = None;
        let mut failures = 0;
        loop {
            let pause = match self.session(&cancel, &mut token, &mut failures).await {
                Ended::Cancelled => return,
                Ended::Unsupported(error) => {
                    info!(collection = self.collection.name(), %error, "change streams unavailable; the relay polls");
                    self.unsupported_recheck
                }
                Ended::Lost(error) => {
                    if resume_point_lost(&error) {
                        token = None;
                    }
                    failures += 1;
                    let delay = self.reconnect_backoff.delay(failures);
                    warn!(collection = self.collection.name(), %error, retry_in = ?delay, "change stream lost");
                    delay
                }
            };
            // Whatever was inserted meanwhile went unannounced.
            self.wakeup.wake();
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(pause) => {}
            }
        }
    }

    /// Opens the stream (after `token` where there is one) and wakes on
    /// each insert until it fails or `cancel` fires. Once open, `failures`
    /// counts again from none.
    async fn session(
        &self,
        cancel: &CancellationToken,
        token: &mut Option<ResumeToken>,
        failures: &mut u32,
    ) -> Ended {
        let open = self
            .collection
            .watch()
            .pipeline(filters::inserts())
            .resume_after(token.clone());
        let mut stream = tokio::select! {
            _ = cancel.cancelled() => return Ended::Cancelled,
            opened = open => match opened {
                Ok(stream) => stream,
                Err(error) => return ended(error),
            },
        };
        debug!(collection = self.collection.name(), "watching");
        *failures = 0;
        self.wakeup.wake();
        loop {
            let next = tokio::select! {
                _ = cancel.cancelled() => return Ended::Cancelled,
                next = stream.next() => next,
            };
            if let Some(seen) = stream.resume_token() {
                *token = Some(seen);
            }
            match next {
                Some(Ok(_)) => self.wakeup.wake(),
                Some(Err(error)) => return ended(error),
                None => {
                    let closed = std::io::Error::from(std::io::ErrorKind::ConnectionAborted);
                    return Ended::Lost(closed.into());
                }
            }
        }
    }
}

tidings_core::settings!(MongoWakeupSource {
    /// How long to wait between attempts to open the stream again after it
    /// failed; defaults to [`DEFAULT_RECONNECT_BACKOFF`](Self::DEFAULT_RECONNECT_BACKOFF).
    reconnect_backoff(backoff: Backoff), get_reconnect_backoff: Backoff;
    /// How long to rely on polling alone before trying again where the
    /// server refused a change stream; defaults to
    /// [`DEFAULT_UNSUPPORTED_RECHECK`](Self::DEFAULT_UNSUPPORTED_RECHECK).
    unsupported_recheck(pause: Duration), get_unsupported_recheck: Duration;
});

impl Step for MongoWakeupSource {
    fn run(&self, cancel: CancellationToken) -> BoxFuture<'_, Result<(), StepError>> {
        Box::pin(async move {
            self.watch(cancel).await;
            Ok(())
        })
    }
}

fn ended(error: MongoError) -> Ended {
    if change_streams_unsupported(&error) {
        Ended::Unsupported(error)
    } else {
        Ended::Lost(error)
    }
}
