//! Queue names to queue URLs, and what a source needs to know of a queue.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::QueueAttributeName;

use crate::error::{Failure, Kind, call};

/// Whether `queue` names a FIFO queue (SQS requires the `.fifo` suffix).
pub fn is_fifo(queue: &str) -> bool {
    queue.ends_with(".fifo")
}

/// Resolves queue URLs once and remembers them.
#[derive(Debug, Clone)]
pub(crate) struct Queues {
    client: Client,
    urls: Arc<Mutex<HashMap<String, String>>>,
}

/// A queue a source reads, with its dead-letter queue.
#[derive(Debug, Clone)]
pub(crate) struct QueueInfo {
    pub(crate) name: String,
    pub(crate) url: String,
    pub(crate) visibility_timeout: Duration,
    pub(crate) dead_letter: Option<Target>,
}

/// A queue messages are sent to.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub(crate) name: String,
    pub(crate) url: String,
}

impl Target {
    pub(crate) fn is_fifo(&self) -> bool {
        is_fifo(&self.name)
    }
}

impl Queues {
    pub(crate) fn new(client: Client) -> Self {
        Self {
            client,
            urls: Arc::default(),
        }
    }

    pub(crate) fn client(&self) -> &Client {
        &self.client
    }

    /// The URL of `queue`; [`Kind::QueueMissing`] when it does not exist or
    /// its name is not one SQS accepts.
    pub(crate) async fn url(&self, queue: &str, timeout: Duration) -> Result<String, Failure> {
        if let Some(url) = self.lock().get(queue) {
            return Ok(url.clone());
        }
        let request = self.client.get_queue_url().queue_name(queue).send();
        let output = call(timeout, request).await.map_err(|f| match f.kind {
            Kind::Rejected => Failure::new(Kind::QueueMissing, f.source),
            _ => f,
        })?;
        let url = output
            .queue_url()
            .ok_or_else(|| Failure::new(Kind::Other, "sqs answered without a queue url"))?
            .to_owned();
        self.lock().insert(queue.to_owned(), url.clone());
        Ok(url)
    }

    /// Forgets the URL of a queue SQS says is gone.
    pub(crate) fn forget(&self, queue: &str) {
        self.lock().remove(queue);
    }

    /// The queue with its visibility timeout and dead-letter queue: the
    /// one configured, else the target of its redrive policy.
    pub(crate) async fn info(
        &self,
        queue: &str,
        dead_letter: Option<&str>,
        timeout: Duration,
    ) -> Result<QueueInfo, Failure> {
        let url = self.url(queue, timeout).await?;
        let request = self
            .client
            .get_queue_attributes()
            .queue_url(&url)
            .attribute_names(QueueAttributeName::VisibilityTimeout)
            .attribute_names(QueueAttributeName::RedrivePolicy)
            .send();
        let output = call(timeout, request).await?;
        let attributes = output.attributes();
        let get = |name: QueueAttributeName| attributes.and_then(|a| a.get(&name));
        let visibility = get(QueueAttributeName::VisibilityTimeout)
            .and_then(|v| v.parse().ok())
            .map_or(DEFAULT_VISIBILITY_TIMEOUT, Duration::from_secs);
        let dead_letter_name = match dead_letter {
            Some(name) => Some(name.to_owned()),
            None => get(QueueAttributeName::RedrivePolicy).and_then(|p| redrive_target(p)),
        };
        let dead_letter = match dead_letter_name {
            Some(name) => match self.url(&name, timeout).await {
                Ok(url) => Some(Target { url, name }),
                Err(failure) if failure.kind == Kind::QueueMissing => {
                    tracing::warn!(
                        messaging.system = "aws_sqs",
                        messaging.destination.name = queue,
                        dead_letter_queue = %name,
                        "the dead-letter queue does not exist; dead-lettering will fail"
                    );
                    None
                }
                Err(failure) => return Err(failure),
            },
            None => None,
        };
        Ok(QueueInfo {
            name: queue.to_owned(),
            url,
            visibility_timeout: visibility,
            dead_letter,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.urls.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// SQS's default visibility timeout: 30 s.
const DEFAULT_VISIBILITY_TIMEOUT: Duration = Duration::from_secs(30);

/// The dead-letter queue's name from a redrive policy.
fn redrive_target(policy: &str) -> Option<String> {
    let policy: serde_json::Value = serde_json::from_str(policy).ok()?;
    let arn = policy.get("deadLetterTargetArn")?.as_str()?;
    arn.rsplit(':').next().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    #[test]
    fn redrive_targets_are_read_from_the_arn() {
        let policy = r#"{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:q-dlq","maxReceiveCount":"5"}"#;
        assert_eq!(super::redrive_target(policy).as_deref(), Some("q-dlq"));
        assert_eq!(super::redrive_target("{}"), None);
    }

    #[test]
    fn fifo_queues_are_told_by_their_suffix() {
        assert!(super::is_fifo("orders.fifo"));
        assert!(!super::is_fifo("orders"));
    }
}
