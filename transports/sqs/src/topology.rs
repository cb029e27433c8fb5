//! Creating the queues specs name: standard or FIFO, with a dead-letter
//! queue behind a redrive policy.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::QueueAttributeName;
use tidings_core::{OutboxSpec, QueueSpec, SpecError, settings};

use crate::error::{Failure, TopologyError, call};
use crate::options::{MAX_DELAY, MAX_VISIBILITY_TIMEOUT, whole_seconds};
use crate::queues::is_fifo;

/// The longest queue name SQS accepts, `.fifo` included.
pub const MAX_QUEUE_NAME_LEN: usize = 80;

/// How long a topology call may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The dead-letter queue [`Topology`] declares for `queue`: `<queue>-dlq`,
/// before the `.fifo` suffix of a FIFO queue (`orders.fifo` →
/// `orders-dlq.fifo`).
pub fn dead_letter_queue(queue: &str) -> String {
    match queue.strip_suffix(".fifo") {
        Some(base) => format!("{base}-dlq.fifo"),
        None => format!("{queue}-dlq"),
    }
}

/// Checks a queue name against SQS's rules: 1 to 80 characters of
/// `A-Za-z0-9_-`, plus the `.fifo` suffix of a FIFO queue.
///
/// # Errors
///
/// [`SpecError::EmptyName`] or [`SpecError::NameTooLong`] when `queue` is
/// empty or longer than 80 characters; [`SpecError::IllegalName`] when it
/// holds a character SQS does not allow.
pub fn validate_queue_name(queue: &str) -> Result<(), SpecError> {
    tidings_core::spec::validate_name("queue", queue)?;
    if queue.len() > MAX_QUEUE_NAME_LEN {
        return Err(SpecError::NameTooLong {
            kind: "queue",
            name: queue.to_owned(),
            len: queue.len(),
            max: MAX_QUEUE_NAME_LEN,
        });
    }
    let base = queue.strip_suffix(".fifo").unwrap_or(queue);
    match base
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-')))
    {
        Some((at, found)) => Err(SpecError::IllegalName {
            kind: "queue",
            name: queue.to_owned(),
            found,
            at,
        }),
        None => Ok(()),
    }
}

/// How [`Topology`] creates a queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueOptions {
    max_receive_count: Option<u32>,
    visibility_timeout: Option<Duration>,
    retention: Option<Duration>,
    delay: Option<Duration>,
}

impl QueueOptions {
    /// Default [`max_receive_count`](Self::max_receive_count): 5.
    pub const DEFAULT_MAX_RECEIVE_COUNT: u32 = 5;

    /// Creates the queue without a dead-letter queue or redrive policy.
    /// Dead-lettering from it then needs
    /// [`SourceOptions::dead_letter_queue`](crate::SourceOptions::dead_letter_queue).
    pub fn without_dead_letter_queue(mut self) -> Self {
        self.max_receive_count = None;
        self
    }
}

settings!(QueueOptions {
    /// After this many receives, SQS moves a message to the dead-letter
    /// queue (the redrive policy's `maxReceiveCount`, at least 1); default
    /// [`DEFAULT_MAX_RECEIVE_COUNT`](Self::DEFAULT_MAX_RECEIVE_COUNT).
    max_receive_count(count: u32) = Some(count.max(1)), get_max_receive_count: Option<u32>;
    /// The queue's `VisibilityTimeout` (whole seconds, at most 12 hours).
    /// Default: SQS's, 30 s.
    visibility_timeout(timeout: Duration) = Some(timeout.min(MAX_VISIBILITY_TIMEOUT)),
        get_visibility_timeout: Option<Duration>;
    /// How long SQS keeps a message (`MessageRetentionPeriod`, 60 s to 14
    /// days), for the queue and its dead-letter queue. Default: SQS's, 4
    /// days.
    retention(retention: Duration) = Some(retention), get_retention: Option<Duration>;
    /// The queue's `DelaySeconds`, at most 15 minutes: the delay of every
    /// message, FIFO ones included. Default: SQS's, none.
    delay(delay: Duration) = Some(delay.min(MAX_DELAY)), get_delay: Option<Duration>;
});

impl Default for QueueOptions {
    fn default() -> Self {
        Self {
            max_receive_count: Some(Self::DEFAULT_MAX_RECEIVE_COUNT),
            visibility_timeout: None,
            retention: None,
            delay: None,
        }
    }
}

/// Creates and deletes the queues specs name.
///
/// For a queue `q` it creates `q` and, unless asked not to, its
/// dead-letter queue [`dead_letter_queue`]`(q)`, of the same kind, with a
/// redrive policy on `q` pointing there. A name ending in `.fifo` makes
/// both FIFO queues, deduplicating on the deduplication id the publisher
/// sets (the event id), not on content. Creating is idempotent as long as
/// the options do not change.
#[derive(Debug, Clone)]
pub struct Topology {
    client: Client,
}

impl Topology {
    /// Topology management over `client`.
    pub fn new(client: Client) -> Self {
        Self { client }
    }

    /// Creates the queue the consumer of `spec` reads.
    ///
    /// # Errors
    ///
    /// The errors of [`declare_queue`](Self::declare_queue) for the spec's name.
    pub async fn declare_queue_spec<T, C>(
        &self,
        spec: &QueueSpec<T, C>,
        options: QueueOptions,
    ) -> Result<String, TopologyError> {
        self.declare_queue(spec.name(), options).await
    }

    /// Creates the destination queue of `spec`.
    ///
    /// # Errors
    ///
    /// [`TopologyError::Name`] when the spec has no destination; otherwise the
    /// errors of [`declare_queue`](Self::declare_queue) for the destination.
    pub async fn declare_outbox_spec<T, C>(
        &self,
        spec: &OutboxSpec<T, C>,
        options: QueueOptions,
    ) -> Result<String, TopologyError> {
        let destination = spec.route().require_destination()?;
        self.declare_queue(destination, options).await
    }

    /// Creates `queue` (and its dead-letter queue); returns its URL.
    ///
    /// # Errors
    ///
    /// [`TopologyError::Name`] when `queue`, or the name of its dead-letter
    /// queue, is not a legal SQS queue name; [`TopologyError::Sqs`] when SQS
    /// refuses a request or does not answer in time, such as a queue that
    /// exists with other attributes.
    #[tracing::instrument(skip_all, fields(messaging.system = "aws_sqs", messaging.destination.name = queue), err)]
    pub async fn declare_queue(
        &self,
        queue: &str,
        options: QueueOptions,
    ) -> Result<String, TopologyError> {
        validate_queue_name(queue)?;
        let mut attributes = base_attributes(queue, &options);
        if let Some(max_receive_count) = options.max_receive_count {
            let dlq = dead_letter_queue(queue);
            validate_queue_name(&dlq)?;
            let mut dlq_attributes = base_attributes(&dlq, &options);
            dlq_attributes.remove(&QueueAttributeName::DelaySeconds);
            dlq_attributes.remove(&QueueAttributeName::VisibilityTimeout);
            let dlq_url = self.create(&dlq, dlq_attributes).await?;
            let arn = self.arn(&dlq, &dlq_url).await?;
            let policy = serde_json::json!({
                "deadLetterTargetArn": arn,
                "maxReceiveCount": max_receive_count.to_string(),
            });
            attributes.insert(QueueAttributeName::RedrivePolicy, policy.to_string());
        }
        self.create(queue, attributes).await
    }

    /// Deletes `queue` and the dead-letter queue
    /// [`declare_queue`](Self::declare_queue) created for it, messages
    /// included; queues that do not exist are skipped.
    ///
    /// # Errors
    ///
    /// [`TopologyError::Name`] when `queue` is not a legal SQS queue name;
    /// [`TopologyError::Sqs`] when SQS refuses a delete or does not answer in
    /// time; a queue deleted before it stays deleted.
    #[tracing::instrument(skip_all, fields(messaging.system = "aws_sqs", messaging.destination.name = queue), err)]
    pub async fn delete_queue(&self, queue: &str) -> Result<(), TopologyError> {
        validate_queue_name(queue)?;
        for name in [queue.to_owned(), dead_letter_queue(queue)] {
            let request = self.client.get_queue_url().queue_name(&name).send();
            let url = match call(REQUEST_TIMEOUT, request).await {
                Ok(output) => output.queue_url().unwrap_or_default().to_owned(),
                Err(_) => continue,
            };
            let request = self.client.delete_queue().queue_url(url).send();
            call(REQUEST_TIMEOUT, request)
                .await
                .map_err(|f| sqs("delete", &name, f))?;
        }
        Ok(())
    }

    async fn create(
        &self,
        queue: &str,
        attributes: HashMap<QueueAttributeName, String>,
    ) -> Result<String, TopologyError> {
        let request = self
            .client
            .create_queue()
            .queue_name(queue)
            .set_attributes(Some(attributes))
            .send();
        let output = call(REQUEST_TIMEOUT, request)
            .await
            .map_err(|f| sqs("create", queue, f))?;
        Ok(output.queue_url().unwrap_or_default().to_owned())
    }

    async fn arn(&self, queue: &str, url: &str) -> Result<String, TopologyError> {
        let request = self
            .client
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(QueueAttributeName::QueueArn)
            .send();
        let output = call(REQUEST_TIMEOUT, request)
            .await
            .map_err(|f| sqs("read the arn of", queue, f))?;
        output
            .attributes()
            .and_then(|a| a.get(&QueueAttributeName::QueueArn))
            .cloned()
            .ok_or_else(|| TopologyError::Sqs {
                action: "read the arn of",
                name: queue.to_owned(),
                source: "sqs answered without the queue arn".into(),
            })
    }
}

fn base_attributes(queue: &str, options: &QueueOptions) -> HashMap<QueueAttributeName, String> {
    let mut attributes = HashMap::new();
    if is_fifo(queue) {
        attributes.insert(QueueAttributeName::FifoQueue, "true".to_owned());
        attributes.insert(
            QueueAttributeName::ContentBasedDeduplication,
            "false".to_owned(),
        );
    }
    let seconds = [
        (
            QueueAttributeName::VisibilityTimeout,
            options.visibility_timeout,
        ),
        (
            QueueAttributeName::MessageRetentionPeriod,
            options.retention,
        ),
        (QueueAttributeName::DelaySeconds, options.delay),
    ];
    for (name, value) in seconds {
        if let Some(value) = value {
            attributes.insert(name, whole_seconds(value).to_string());
        }
    }
    attributes
}

fn sqs(action: &'static str, name: &str, failure: Failure) -> TopologyError {
    TopologyError::Sqs {
        action,
        name: name.to_owned(),
        source: failure.source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dead_letter_queues_keep_the_fifo_suffix() {
        assert_eq!(dead_letter_queue("orders"), "orders-dlq");
        assert_eq!(dead_letter_queue("orders.fifo"), "orders-dlq.fifo");
    }

    #[test]
    fn queue_names_follow_sqs_rules() {
        validate_queue_name("orders_1-a").unwrap();
        validate_queue_name("orders.fifo").unwrap();
        assert!(validate_queue_name("a.b").is_err());
        assert!(validate_queue_name(&"q".repeat(81)).is_err());
        assert!(validate_queue_name("").is_err());
    }

    #[test]
    fn fifo_queues_deduplicate_on_ids() {
        let attributes = base_attributes("q.fifo", &QueueOptions::default());
        assert_eq!(attributes[&QueueAttributeName::FifoQueue], "true");
        assert_eq!(
            attributes[&QueueAttributeName::ContentBasedDeduplication],
            "false"
        );
        let attributes = base_attributes(
            "q",
            &QueueOptions::default().visibility_timeout(Duration::from_millis(1500)),
        );
        assert_eq!(attributes[&QueueAttributeName::VisibilityTimeout], "2");
        assert!(!attributes.contains_key(&QueueAttributeName::FifoQueue));
    }
}
