//! Settings of the publisher and the source.

use std::collections::HashMap;
use std::time::Duration;

use tidings_core::{Backoff, destination_settings, settings};

/// The longest `DelaySeconds` SQS accepts: 15 minutes.
pub const MAX_DELAY: Duration = Duration::from_secs(900);

/// The longest visibility timeout SQS accepts: 12 hours.
pub const MAX_VISIBILITY_TIMEOUT: Duration = Duration::from_secs(12 * 60 * 60);

/// Settings for the messages of one destination queue.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DestinationOptions {
    pub(crate) delay: Option<Duration>,
}

settings!(DestinationOptions {
    /// Delays every message to this destination by `delay` (the message's
    /// `DelaySeconds`, rounded up to whole seconds, at most [`MAX_DELAY`]).
    /// FIFO queues take no per-message delay: for them this is ignored and
    /// the queue's own `DelaySeconds` applies (see
    /// [`QueueOptions::delay`](crate::QueueOptions::delay)). Default: no
    /// delay of its own, the queue's.
    delay(delay: Duration) = Some(delay.min(MAX_DELAY)), get_delay: Option<Duration>;
});

/// Settings of an [`SqsPublisher`](crate::SqsPublisher).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublisherOptions {
    pub(crate) max_message_size: usize,
    pub(crate) request_timeout: Duration,
    pub(crate) default_message_group: String,
    pub(crate) destinations: HashMap<String, DestinationOptions>,
}

impl PublisherOptions {
    /// Default [`max_message_size`](Self::max_message_size): 256 KiB, SQS's
    /// classic limit for one message and for one batch.
    pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 256 * 1024;
    /// Default [`request_timeout`](Self::request_timeout): 30 s.
    pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
    /// Default [`default_message_group`](Self::default_message_group):
    /// `default`.
    pub const DEFAULT_MESSAGE_GROUP: &'static str = "default";
}

settings!(PublisherOptions {
    /// The largest message, and the largest batch, sent: body plus every
    /// attribute's name, type and value. A larger message fails with
    /// [`PublishError::TooLarge`](tidings_core::PublishError::TooLarge)
    /// before anything is sent. SQS now accepts up to 1 MiB per message
    /// and batch; raise this to the queue's `MaximumMessageSize` to use it.
    /// Default [`DEFAULT_MAX_MESSAGE_SIZE`](Self::DEFAULT_MAX_MESSAGE_SIZE).
    max_message_size(bytes: usize), get_max_message_size: usize;
    /// How long one `SendMessageBatch` call may take before its messages
    /// fail with [`PublishError::Timeout`](tidings_core::PublishError::Timeout);
    /// default [`DEFAULT_REQUEST_TIMEOUT`](Self::DEFAULT_REQUEST_TIMEOUT).
    request_timeout(timeout: Duration), get_request_timeout: Duration;
    /// The message group of FIFO messages without an ordering key. Messages
    /// with one use it as their group, so each key is delivered in order.
    /// Default [`DEFAULT_MESSAGE_GROUP`](Self::DEFAULT_MESSAGE_GROUP).
    default_message_group(group: impl Into<String>) = group.into(), get_default_message_group: &str;
});

destination_settings!(PublisherOptions, DestinationOptions);

impl Default for PublisherOptions {
    fn default() -> Self {
        Self {
            max_message_size: Self::DEFAULT_MAX_MESSAGE_SIZE,
            request_timeout: Self::DEFAULT_REQUEST_TIMEOUT,
            default_message_group: Self::DEFAULT_MESSAGE_GROUP.to_owned(),
            destinations: HashMap::new(),
        }
    }
}

/// Settings of an [`SqsSource`](crate::SqsSource).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceOptions {
    pub(crate) max_messages: i32,
    pub(crate) wait_time: Duration,
    pub(crate) visibility_timeout: Option<Duration>,
    pub(crate) heartbeat: bool,
    pub(crate) request_timeout: Duration,
    pub(crate) retry_backoff: Backoff,
    pub(crate) dead_letter_queues: HashMap<String, String>,
}

impl SourceOptions {
    /// Default [`max_messages`](Self::max_messages): 10, the most SQS
    /// returns per call.
    pub const DEFAULT_MAX_MESSAGES: u8 = 10;
    /// Default [`wait_time`](Self::wait_time): 20 s, the longest long poll.
    pub const DEFAULT_WAIT_TIME: Duration = Duration::from_secs(20);
    /// Default [`request_timeout`](Self::request_timeout): 10 s.
    pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
    /// Default [`retry_backoff`](Self::retry_backoff): from 200 ms,
    /// doubling, capped at 10 s.
    pub const DEFAULT_RETRY_BACKOFF: Backoff =
        Backoff::new(Duration::from_millis(200), Duration::from_secs(10));

    /// Messages asked for per `ReceiveMessage` call, 1 to 10. Messages
    /// received but not yet yielded stay invisible to other consumers (their
    /// visibility is extended like a running handler's), and are released
    /// when the stream is dropped. Default
    /// [`DEFAULT_MAX_MESSAGES`](Self::DEFAULT_MAX_MESSAGES).
    pub fn max_messages(mut self, count: u8) -> Self {
        self.max_messages = i32::from(count.clamp(1, 10));
        self
    }

    /// Where dead-lettered deliveries of `queue` go. Default: the target of
    /// the queue's redrive policy.
    pub fn dead_letter_queue(
        mut self,
        queue: impl Into<String>,
        dead_letter_queue: impl Into<String>,
    ) -> Self {
        self.dead_letter_queues
            .insert(queue.into(), dead_letter_queue.into());
        self
    }

    /// The [`max_messages`](Self::max_messages) setting.
    pub fn get_max_messages(&self) -> u8 {
        u8::try_from(self.max_messages).unwrap_or(Self::DEFAULT_MAX_MESSAGES)
    }

    /// The [`dead_letter_queue`](Self::dead_letter_queue) setting of
    /// `queue`, `None` for its redrive policy's target.
    pub fn get_dead_letter_queue(&self, queue: &str) -> Option<&str> {
        self.dead_letter_queues.get(queue).map(String::as_str)
    }
}

settings!(SourceOptions {
    /// How long one `ReceiveMessage` call waits for messages (long
    /// polling), at most 20 s; default
    /// [`DEFAULT_WAIT_TIME`](Self::DEFAULT_WAIT_TIME).
    wait_time(wait: Duration) = wait.min(Self::DEFAULT_WAIT_TIME), get_wait_time: Duration;
    /// The visibility timeout of received messages, rounded up to whole
    /// seconds. Default: the queue's own `VisibilityTimeout`.
    visibility_timeout(timeout: Duration) = Some(timeout.min(MAX_VISIBILITY_TIMEOUT)),
        get_visibility_timeout: Option<Duration>;
    /// Whether received messages have their visibility extended while they
    /// wait or their handler runs (default `true`): every third of the
    /// visibility timeout, by one visibility timeout, until the delivery is settled or
    /// dropped.
    heartbeat(enabled: bool), get_heartbeat: bool;
    /// How long any call but the long poll may take (the long poll gets
    /// this on top of its wait time) before it counts as failed; default
    /// [`DEFAULT_REQUEST_TIMEOUT`](Self::DEFAULT_REQUEST_TIMEOUT).
    request_timeout(timeout: Duration), get_request_timeout: Duration;
    /// The waits between `ReceiveMessage` calls after they failed; default
    /// [`DEFAULT_RETRY_BACKOFF`](Self::DEFAULT_RETRY_BACKOFF).
    retry_backoff(backoff: Backoff), get_retry_backoff: Backoff;
});

impl Default for SourceOptions {
    fn default() -> Self {
        Self {
            max_messages: i32::from(Self::DEFAULT_MAX_MESSAGES),
            wait_time: Self::DEFAULT_WAIT_TIME,
            visibility_timeout: None,
            heartbeat: true,
            request_timeout: Self::DEFAULT_REQUEST_TIMEOUT,
            retry_backoff: Self::DEFAULT_RETRY_BACKOFF,
            dead_letter_queues: HashMap::new(),
        }
    }
}

/// Whole seconds, rounded up, as SQS wants them.
pub(crate) fn whole_seconds(duration: Duration) -> i32 {
    let seconds = duration.as_secs() + u64::from(duration.subsec_nanos() > 0);
    i32::try_from(seconds).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_round_up() {
        assert_eq!(whole_seconds(Duration::ZERO), 0);
        assert_eq!(whole_seconds(Duration::from_millis(1)), 1);
        assert_eq!(whole_seconds(Duration::from_millis(2000)), 2);
        assert_eq!(whole_seconds(Duration::from_millis(2001)), 3);
    }

    #[test]
    fn limits_are_clamped() {
        let options = SourceOptions::default()
            .max_messages(50)
            .wait_time(Duration::from_secs(60));
        assert_eq!(options.max_messages, 10);
        assert_eq!(options.wait_time, Duration::from_secs(20));
        let dest = DestinationOptions::default().delay(Duration::from_secs(3600));
        assert_eq!(dest.delay, Some(MAX_DELAY));
    }
}
