//! SQS dead-letter queues: `<queue>-dlq` (`<base>-dlq.fifo` for FIFO
//! queues), filled by SQS's redrive policy or by the consumer's acker
//! (with the reason).
//!
//! Reading receives each message with a visibility timeout and holds it
//! invisible until the scan ends, then makes every message not replayed or
//! purged visible again. If the tool dies, the timeout returns them.
//!
//! A receive changes nothing a reader sees but the message's
//! `ApproximateReceiveCount`, which counts reads as deliveries. Only a
//! redrive policy acts on that count: a dead-letter queue with one of its
//! own would move its messages on after that many looks, so a scan refuses
//! such a queue before it reads anything, naming the command that removes
//! the policy. The delivery count shown is the one the parking acker
//! recorded. A scan stops once it has seen as many messages as the queue
//! held when it started, instead of waiting out an empty long poll.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tidings_sqs::aws_sdk_sqs::Client;
use tidings_sqs::aws_sdk_sqs::error::SdkError;
use tidings_sqs::aws_sdk_sqs::types::{Message, MessageSystemAttributeName, QueueAttributeName};
use tidings_sqs::{dead_letter_queue, is_fifo, message_headers, replay_attributes};
use tokio::sync::Mutex;

use super::scan::{Action, DeadLetterQueues, Scan, ScanRequest};
use super::{DeadLetter, QueueDepth};
use crate::AdminError;

/// How long a scan holds the messages it received.
const HOLD: Duration = Duration::from_secs(60);

/// The dead-letter queues of SQS (or a stand-in).
///
/// ```no_run
/// # async fn demo() -> Result<(), tidings_admin::AdminError> {
/// use tidings_admin::dead_letters::{
///     DeadLetterFilter, DeadLetterQueues, ReplayOptions, SqsDeadLetters,
/// };
///
/// let dead = SqsDeadLetters::new(tidings_sqs::local_client("http://127.0.0.1:4566"));
/// let report = dead.replay("orders", &DeadLetterFilter::default(), ReplayOptions::new()).await?;
/// println!("replayed {} of {}", report.done, report.matched);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SqsDeadLetters {
    client: Client,
    /// The turn scans take (see [`Scan::scan_alone`]).
    turns: Arc<Mutex<()>>,
}

impl SqsDeadLetters {
    /// The dead-letter queues `client` reaches.
    pub fn new(client: Client) -> Self {
        Self {
            client,
            turns: Arc::default(),
        }
    }

    /// The queue's depth and redrive policy, in one `GetQueueAttributes`.
    async fn state(&self, url: &str) -> Result<QueueState, AdminError> {
        let output = self
            .client
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .attribute_names(QueueAttributeName::RedrivePolicy)
            .send()
            .await
            .map_err(broker)?;
        let attribute = |name| output.attributes().and_then(|a| a.get(&name)).cloned();
        Ok(QueueState {
            depth: attribute(QueueAttributeName::ApproximateNumberOfMessages)
                .and_then(|n| n.parse().ok())
                .unwrap_or(0),
            redrive_policy: attribute(QueueAttributeName::RedrivePolicy)
                .filter(|policy| !policy.trim().is_empty()),
        })
    }

    async fn receive(&self, url: &str) -> Result<Vec<Message>, AdminError> {
        let output = self
            .client
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .visibility_timeout(HOLD.as_secs() as i32)
            .wait_time_seconds(1)
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .message_attribute_names("All")
            .send()
            .await
            .map_err(broker)?;
        Ok(output.messages.unwrap_or_default())
    }

    /// Sends a copy of a dead letter to the queue at `url`.
    async fn send_copy(&self, url: &str, queue: &str, message: &Message) -> Result<(), AdminError> {
        let attributes = replay_attributes(message.message_attributes()).map_err(|reason| {
            AdminError::Invalid(format!("cannot replay a dead letter: {reason}"))
        })?;
        let mut request = self
            .client
            .send_message()
            .queue_url(url)
            .message_body(message.body().unwrap_or("-"))
            .set_message_attributes(Some(attributes));
        if is_fifo(queue) {
            let group = message
                .attributes()
                .and_then(|a| a.get(&MessageSystemAttributeName::MessageGroupId))
                .cloned()
                .unwrap_or_else(|| "default".to_owned());
            // A rerun within SQS's five-minute window sends the same
            // deduplication id, so SQS drops the second copy itself.
            request = request
                .message_group_id(group)
                .message_deduplication_id(message.message_id().unwrap_or_default());
        }
        request.send().await.map_err(broker)?;
        Ok(())
    }

    /// Makes held messages visible again; a failure leaves them to the
    /// visibility timeout.
    async fn release(&self, url: &str, held: Vec<String>) {
        for receipt in held {
            let _ = self
                .client
                .change_message_visibility()
                .queue_url(url)
                .receipt_handle(receipt)
                .visibility_timeout(0)
                .send()
                .await;
        }
    }

    async fn url(&self, queue: &str, hint: &'static str) -> Result<String, AdminError> {
        match self.client.get_queue_url().queue_name(queue).send().await {
            Ok(output) => Ok(output.queue_url().unwrap_or_default().to_owned()),
            Err(SdkError::ServiceError(_)) => Err(AdminError::UnknownQueue {
                queue: queue.to_owned(),
                hint,
            }),
            Err(error) => Err(broker(error)),
        }
    }
}

/// What a scan reads of a dead-letter queue before it starts.
struct QueueState {
    /// Messages in it (approximately).
    depth: u64,
    /// Its own redrive policy, if it has one.
    redrive_policy: Option<String>,
}

/// The error refusing to read a dead-letter queue with a redrive policy of
/// its own, with the command that removes the policy.
fn refuse_redriven(dlq: &str, url: &str, policy: &str) -> AdminError {
    AdminError::Invalid(format!(
        "dead-letter queue {dlq:?} has a redrive policy of its own ({policy}), so reading \
         its messages would move them on after a few looks; remove the policy with \
         `aws sqs set-queue-attributes --queue-url {url} --attributes '{{\"RedrivePolicy\":\"\"}}'` \
         and run the command again"
    ))
}

const DLQ_HINT: &str =
    "its queue was never declared with a dead-letter queue, or the name is misspelt";
const TARGET_HINT: &str = "create it again (Topology::declare_queue) before replaying into it";

fn read(message: &Message) -> DeadLetter {
    let headers = message_headers(message.message_attributes());
    let body = message.body().unwrap_or_default().as_bytes();
    let id = headers
        .get("ce-id")
        .cloned()
        .or_else(|| message.message_id().map(str::to_owned))
        .unwrap_or_default();
    let event_type = headers.get("ce-type").cloned();
    let mut letter = DeadLetter::new(id, headers, body);
    letter.event_type = event_type;
    letter.read_parking_headers();
    letter.age_secs = message
        .attributes()
        .and_then(|a| a.get(&MessageSystemAttributeName::SentTimestamp))
        .and_then(|ms| ms.parse::<u64>().ok())
        .map(|ms| {
            let sent = UNIX_EPOCH + Duration::from_millis(ms);
            SystemTime::now()
                .duration_since(sent)
                .unwrap_or_default()
                .as_secs_f64()
        });
    letter
}

fn broker<E: std::error::Error + Send + Sync + 'static>(error: E) -> AdminError {
    AdminError::Broker(Box::new(error))
}

impl DeadLetterQueues for SqsDeadLetters {
    /// SQS counts approximately.
    async fn depth(&self, queue: &str) -> Result<QueueDepth, AdminError> {
        let dlq = dead_letter_queue(queue);
        let url = self.url(&dlq, DLQ_HINT).await?;
        let messages = self.state(&url).await?.depth;
        Ok(QueueDepth {
            queue: dlq,
            messages,
        })
    }
}

impl Scan for SqsDeadLetters {
    fn dead_letter_queue(&self, queue: &str) -> String {
        dead_letter_queue(queue)
    }

    fn turns(&self) -> &Mutex<()> {
        &self.turns
    }

    async fn scan(&self, request: ScanRequest<'_>) -> Result<(Vec<DeadLetter>, usize), AdminError> {
        let (queue, filter, action, options) = request.parts();
        let dlq = dead_letter_queue(queue);
        let dlq_url = self.url(&dlq, DLQ_HINT).await?;
        let state = self.state(&dlq_url).await?;
        if let Some(policy) = state.redrive_policy {
            return Err(refuse_redriven(&dlq, &dlq_url, &policy));
        }
        let target = match action {
            Action::Replay => Some(self.url(queue, TARGET_HINT).await?),
            _ => None,
        };
        let acting = action != Action::Peek && !options.dry_run;
        let mut held = Vec::new();
        let mut seen = HashSet::new();
        let mut letters = Vec::new();
        let mut done = 0;
        let outcome = async {
            while letters.len() < filter.limit && (seen.len() as u64) < state.depth {
                let batch = self.receive(&dlq_url).await?;
                if batch.is_empty() {
                    break;
                }
                for message in batch {
                    let receipt = message.receipt_handle().unwrap_or_default().to_owned();
                    let letter = read(&message);
                    let fresh = seen.insert(message.message_id().unwrap_or_default().to_owned());
                    let take = fresh && filter.matches(&letter) && letters.len() < filter.limit;
                    if !take || !acting {
                        held.push(receipt);
                        if take {
                            letters.push(letter);
                        }
                        continue;
                    }
                    if let Some(url) = &target {
                        if let Some(pause) = options.pause().filter(|_| done > 0) {
                            tokio::time::sleep(pause).await;
                        }
                        self.send_copy(url, queue, &message).await?;
                    }
                    self.client
                        .delete_message()
                        .queue_url(&dlq_url)
                        .receipt_handle(&receipt)
                        .send()
                        .await
                        .map_err(broker)?;
                    done += 1;
                    letters.push(letter);
                }
            }
            Ok::<_, AdminError>(())
        }
        .await;
        self.release(&dlq_url, held).await;
        outcome.map(|()| (letters, done))
    }
}
