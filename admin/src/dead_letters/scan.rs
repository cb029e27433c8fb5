//! What the RabbitMQ and SQS readers share: each scans a dead-letter queue
//! once, acting on the messages that match; listing, showing, replaying
//! and purging are that scan with another action, provided by
//! [`DeadLetterQueues`] to every reader.

use std::future::Future;

use tokio::sync::Mutex;
use tracing::info;

use super::{DeadLetter, DeadLetterFilter, DeadLetterReport, QueueDepth, ReplayOptions};
use crate::AdminError;

/// What a scan does with each matching message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Looks and leaves the message in place.
    Peek,
    /// Publishes a copy to the original queue, then removes the message.
    Replay,
    /// Removes the message.
    Purge,
}

/// A broker's dead-letter reader: the one step each broker writes. Public
/// in a private module, so no reader outside this crate can be written.
pub trait Scan: Sync {
    /// The dead-letter queue of `queue`.
    fn dead_letter_queue(&self, queue: &str) -> String;

    /// Takes every message of the dead-letter queue of `queue` once,
    /// acting on those matching (up to the filter's limit); returns them
    /// and how many the action was done to.
    ///
    /// # Errors
    ///
    /// [`AdminError::UnknownQueue`] when the dead-letter queue, or for a replay
    /// `queue` itself, does not exist; [`AdminError::Broker`] when the broker
    /// fails or goes away, leaving the messages not yet acted on in place.
    fn scan(
        &self,
        request: ScanRequest<'_>,
    ) -> impl Future<Output = Result<(Vec<DeadLetter>, usize), AdminError>> + Send;

    /// The turn the reader's scans take, shared by its clones.
    fn turns(&self) -> &Mutex<()>;

    /// [`scan`](Self::scan) once no other scan of this reader runs. A scan
    /// takes each message off the queue and puts it back, so two at once
    /// would each hold messages the other looks for, and a dry run could
    /// miss what it should find.
    fn scan_alone(
        &self,
        request: ScanRequest<'_>,
    ) -> impl Future<Output = Result<(Vec<DeadLetter>, usize), AdminError>> + Send {
        async move {
            let _turn = self.turns().lock().await;
            self.scan(request).await
        }
    }
}

/// One scan of a dead-letter queue: whose, which messages, and what to do
/// with them.
#[derive(Debug, Clone, Copy)]
pub struct ScanRequest<'a> {
    /// The queue whose dead letters are scanned.
    pub queue: &'a str,
    /// Which of them the action is done to.
    pub filter: &'a DeadLetterFilter,
    /// What is done.
    pub action: Action,
    /// How a replay or purge runs.
    pub options: ReplayOptions,
}

impl<'a> ScanRequest<'a> {
    /// The queue, the filter, the action and the options.
    pub fn parts(self) -> (&'a str, &'a DeadLetterFilter, Action, ReplayOptions) {
        (self.queue, self.filter, self.action, self.options)
    }
}

/// A broker's dead-letter queues, as an operator works on them: one
/// interface to every broker, which the CLI's commands are written
/// against.
///
/// ```no_run
/// # async fn demo() -> Result<(), tidings_admin::AdminError> {
/// use tidings_admin::dead_letters::{DeadLetterFilter, DeadLetterQueues, RabbitDeadLetters};
///
/// async fn show_depth(broker: &impl DeadLetterQueues) -> Result<(), tidings_admin::AdminError> {
///     let depth = broker.depth("orders").await?;
///     let parked = broker.list("orders", &DeadLetterFilter::default()).await?;
///     println!("{} messages in {}, first {:?}", depth.messages, depth.queue, parked.first());
///     Ok(())
/// }
///
/// show_depth(&RabbitDeadLetters::connect("amqp://127.0.0.1:5672/%2f").await?).await?;
/// # Ok(()) }
/// ```
pub trait DeadLetterQueues: Scan {
    /// The depth of the dead-letter queue of `queue`.
    ///
    /// # Errors
    ///
    /// [`AdminError::UnknownQueue`] when it does not exist.
    fn depth(&self, queue: &str) -> impl Future<Output = Result<QueueDepth, AdminError>> + Send;

    /// The dead letters of `queue` matching `filter`, left in place.
    ///
    /// # Errors
    ///
    /// [`AdminError::UnknownQueue`] when the dead-letter queue of `queue` does
    /// not exist; [`AdminError::Broker`] when the broker fails or goes away.
    fn list(
        &self,
        queue: &str,
        filter: &DeadLetterFilter,
    ) -> impl Future<Output = Result<Vec<DeadLetter>, AdminError>> + Send {
        async move {
            let (letters, _) = self
                .scan_alone(ScanRequest {
                    queue,
                    filter,
                    action: Action::Peek,
                    options: ReplayOptions::new(),
                })
                .await?;
            Ok(letters)
        }
    }

    /// The dead letter `id` of `queue`, left in place.
    ///
    /// # Errors
    ///
    /// [`AdminError::NoDeadLetter`] when the queue holds no message `id`.
    fn show(
        &self,
        queue: &str,
        id: &str,
    ) -> impl Future<Output = Result<DeadLetter, AdminError>> + Send {
        async move {
            let filter = DeadLetterFilter {
                ids: Some(vec![id.to_owned()]),
                limit: 1,
                ..DeadLetterFilter::default()
            };
            self.list(queue, &filter)
                .await?
                .pop()
                .ok_or_else(|| AdminError::NoDeadLetter {
                    queue: self.dead_letter_queue(queue),
                    id: id.to_owned(),
                })
        }
    }

    /// Publishes each dead letter of `queue` matching `filter` back to
    /// `queue`, waits for the broker to take the copy, then removes the
    /// dead letter.
    ///
    /// # Errors
    ///
    /// [`AdminError::UnknownQueue`] when `queue` or its dead-letter queue
    /// is gone; [`AdminError::Broker`] when the broker goes away, leaving
    /// the dead letters not yet replayed in place.
    fn replay(
        &self,
        queue: &str,
        filter: &DeadLetterFilter,
        options: ReplayOptions,
    ) -> impl Future<Output = Result<DeadLetterReport, AdminError>> + Send {
        act(self, queue, filter, Action::Replay, options)
    }

    /// Removes each dead letter of `queue` matching `filter`.
    ///
    /// # Errors
    ///
    /// [`AdminError::UnknownQueue`] when the dead-letter queue of `queue` does
    /// not exist; [`AdminError::Broker`] when the broker goes away, leaving the
    /// dead letters not yet removed in place.
    fn purge(
        &self,
        queue: &str,
        filter: &DeadLetterFilter,
        options: ReplayOptions,
    ) -> impl Future<Output = Result<DeadLetterReport, AdminError>> + Send {
        act(self, queue, filter, Action::Purge, options)
    }
}

/// Replays or purges the dead letters of `queue` matching `filter`.
async fn act(
    reader: &(impl Scan + ?Sized),
    queue: &str,
    filter: &DeadLetterFilter,
    action: Action,
    options: ReplayOptions,
) -> Result<DeadLetterReport, AdminError> {
    let request = ScanRequest {
        queue,
        filter,
        action,
        options,
    };
    let (letters, done) = reader.scan_alone(request).await?;
    info!(
        messaging.destination.name = queue,
        ?action,
        done,
        dry_run = options.dry_run,
        "dead letters handled"
    );
    Ok(DeadLetterReport {
        queue: reader.dead_letter_queue(queue),
        matched: letters.len(),
        ids: letters.iter().map(|letter| letter.id.clone()).collect(),
        done,
        dry_run: options.dry_run,
    })
}
