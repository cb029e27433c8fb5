//! What a subscription shares with the deliveries it yields.

use std::time::Duration;

use aws_sdk_sqs::Client;

use crate::deleter::Deleter;
use crate::error::{Failure, call};
use crate::options::{MAX_VISIBILITY_TIMEOUT, SourceOptions, whole_seconds};
use crate::queues::QueueInfo;

/// One subscription's queue, client and settings.
#[derive(Debug)]
pub(crate) struct QueueContext {
    pub(crate) client: Client,
    pub(crate) queue: QueueInfo,
    /// The visibility timeout received messages have, and the heartbeat
    /// extends them by.
    pub(crate) visibility: Duration,
    pub(crate) options: SourceOptions,
    pub(crate) deleter: Deleter,
}

impl QueueContext {
    pub(crate) fn new(client: Client, queue: QueueInfo, options: SourceOptions) -> Self {
        let visibility = options
            .visibility_timeout
            .unwrap_or(queue.visibility_timeout);
        let deleter = Deleter::start(client.clone(), queue.url.clone(), options.request_timeout);
        Self {
            client,
            queue,
            visibility,
            options,
            deleter,
        }
    }

    /// The queue's name.
    pub(crate) fn name(&self) -> &str {
        &self.queue.name
    }

    /// Makes a received message visible again after `after` (now for zero).
    pub(crate) async fn change_visibility(
        &self,
        receipt: &str,
        after: Duration,
    ) -> Result<(), Failure> {
        let request = self
            .client
            .change_message_visibility()
            .queue_url(&self.queue.url)
            .receipt_handle(receipt)
            .visibility_timeout(whole_seconds(after.min(MAX_VISIBILITY_TIMEOUT)))
            .send();
        call(self.options.request_timeout, request).await.map(drop)
    }
}
