//! What the RabbitMQ and SQS readers share: each scans a dead-letter queue
//! once, acting on the messages that match; listing, showing, replaying
//! and purging are that scan with another action.

use std::future::Future;

use tracing::info;

use super::{DeadLetter, DeadLetterFilter, DeadLetterReport, ReplayOptions};
use crate::AdminError;

/// What a scan does with each matching message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Action {
    Peek,
    Replay,
    Purge,
}

/// A broker's dead-letter reader.
pub(super) trait Scan: Sync {
    /// The dead-letter queue of `queue`.
    fn dead_letter_queue(&self, queue: &str) -> String;

    /// Takes every message of the dead-letter queue of `queue` once,
    /// acting on those matching (up to the filter's limit); returns them
    /// and how many the action was done to.
    fn scan(
        &self,
        queue: &str,
        filter: &DeadLetterFilter,
        action: Action,
        options: ReplayOptions,
    ) -> impl Future<Output = Result<(Vec<DeadLetter>, usize), AdminError>> + Send;
}

/// The dead letters of `queue` matching `filter`, left in place.
pub(super) async fn list(
    reader: &impl Scan,
    queue: &str,
    filter: &DeadLetterFilter,
) -> Result<Vec<DeadLetter>, AdminError> {
    let (letters, _) = reader
        .scan(queue, filter, Action::Peek, ReplayOptions::new())
        .await?;
    Ok(letters)
}

/// The dead letter `id` of `queue`, left in place.
pub(super) async fn show(
    reader: &impl Scan,
    queue: &str,
    id: &str,
) -> Result<DeadLetter, AdminError> {
    let filter = DeadLetterFilter {
        ids: Some(vec![id.to_owned()]),
        limit: 1,
        ..DeadLetterFilter::default()
    };
    list(reader, queue, &filter)
        .await?
        .pop()
        .ok_or_else(|| AdminError::NoDeadLetter {
            queue: reader.dead_letter_queue(queue),
            id: id.to_owned(),
        })
}

/// Replays or purges the dead letters of `queue` matching `filter`.
pub(super) async fn act(
    reader: &impl Scan,
    queue: &str,
    filter: &DeadLetterFilter,
    action: Action,
    options: ReplayOptions,
) -> Result<DeadLetterReport, AdminError> {
    let (letters, done) = reader.scan(queue, filter, action, options).await?;
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
        done,
        dry_run: options.dry_run,
    })
}
