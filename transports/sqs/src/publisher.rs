//! Publishing envelopes with `SendMessageBatch`.

use std::collections::HashMap;
use std::sync::Arc;

use aws_sdk_sqs::Client;
use futures::future::join_all;
use tidings_core::port::trace_outcome;
use tidings_core::{Envelope, PublishBatch, PublishError, Publisher};

use crate::batching::{MAX_BATCH_ENTRIES, chunk};
use crate::error::{Failure, Kind, call, entry_failure, publish_error};
use crate::options::PublisherOptions;
use crate::outgoing::Outgoing;
use crate::queues::{Queues, is_fifo};

/// Publishes envelopes to SQS queues; `Ok` only once SQS has accepted the
/// message.
///
/// The destination is the queue's name. A batch is sent with
/// `SendMessageBatch`, per destination, in calls of at most ten messages and
/// [`PublisherOptions::max_message_size`] bytes, and every message gets its
/// own result:
///
/// | what happened | error |
/// |---|---|
/// | the queue does not exist | [`PublishError::Unroutable`] |
/// | the message is above [`PublisherOptions::max_message_size`] (checked before sending) or SQS's limit | [`PublishError::TooLarge`] |
/// | SQS refused the entry as malformed (sender fault) | [`PublishError::Invalid`] |
/// | throttled, or the entry failed on SQS's side | [`PublishError::Refused`] |
/// | no answer within [`PublisherOptions::request_timeout`] | [`PublishError::Timeout`] |
/// | SQS cannot be reached | [`PublishError::Unavailable`] |
///
/// When SQS refuses a whole batch call as malformed, its messages are sent
/// again one per call, so only the message at fault fails.
///
/// On FIFO queues (names ending in `.fifo`) the message group is the
/// envelope's ordering key (hashed into a legal group id when it is not
/// one: longer than 128 characters, or not printable ASCII), or
/// [`PublisherOptions::default_message_group`],
/// and the deduplication id is the event id, so a message published twice
/// within SQS's five-minute deduplication window is delivered once. The
/// calls of one FIFO destination are made one after the other, in order.
#[derive(Clone)]
pub struct SqsPublisher {
    inner: Arc<Inner>,
}

struct Inner {
    queues: Queues,
    options: PublisherOptions,
}

impl std::fmt::Debug for SqsPublisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqsPublisher")
            .field("options", &self.inner.options)
            .finish_non_exhaustive()
    }
}

type Outcome = (usize, Result<(), PublishError>);

impl SqsPublisher {
    /// A publisher over `client` (configured with region, credentials and,
    /// for a local stand-in, an endpoint URL).
    ///
    /// ```
    /// use tidings_sqs::{PublisherOptions, SqsPublisher, local_client};
    ///
    /// // Against AWS: `aws_sdk_sqs::Client::new(&aws_config::load_from_env().await)`.
    /// let client = local_client("http://127.0.0.1:9324");
    /// let publisher = SqsPublisher::new(client, PublisherOptions::default());
    /// # drop(publisher);
    /// ```
    pub fn new(client: Client, options: PublisherOptions) -> Self {
        Self {
            inner: Arc::new(Inner {
                queues: Queues::new(client),
                options,
            }),
        }
    }

    async fn publish_all(&self, envelopes: &[Envelope]) -> Vec<Result<(), PublishError>> {
        let mut by_destination: Vec<(&str, Vec<usize>)> = Vec::new();
        let mut position: HashMap<&str, usize> = HashMap::new();
        for (index, envelope) in envelopes.iter().enumerate() {
            let destination = envelope.destination.as_str();
            let at = *position.entry(destination).or_insert_with(|| {
                by_destination.push((destination, Vec::new()));
                by_destination.len() - 1
            });
            by_destination[at].1.push(index);
        }
        let sent = join_all(
            by_destination
                .into_iter()
                .map(|(destination, indices)| self.publish_to(destination, indices, envelopes)),
        )
        .await;
        let mut slots: Vec<Option<Result<(), PublishError>>> =
            envelopes.iter().map(|_| None).collect();
        for (index, outcome) in sent.into_iter().flatten() {
            slots[index] = Some(outcome);
        }
        envelopes
            .iter()
            .zip(slots)
            .map(|(envelope, slot)| {
                trace_outcome(envelope, slot.unwrap_or(Err(PublishError::Timeout)))
            })
            .collect()
    }

    async fn publish_to(
        &self,
        destination: &str,
        indices: Vec<usize>,
        envelopes: &[Envelope],
    ) -> Vec<Outcome> {
        let options = &self.inner.options;
        let url = match self
            .inner
            .queues
            .url(destination, options.request_timeout)
            .await
        {
            Ok(url) => url,
            Err(failure) => {
                return indices
                    .into_iter()
                    .map(|i| (i, Err(self.error(failure.copy(), &envelopes[i]))))
                    .collect();
            }
        };
        tracing::Span::current().record("aws.sqs.queue.url", &url);
        let fifo = is_fifo(destination);
        let mut outcomes = Vec::with_capacity(indices.len());
        let mut ready = Vec::with_capacity(indices.len());
        for index in indices {
            match Outgoing::prepare(index, &envelopes[index], fifo, options) {
                Ok(out) => ready.push(out),
                Err(error) => outcomes.push((index, Err(error))),
            }
        }
        let chunks = chunk(
            ready,
            |o| o.size,
            MAX_BATCH_ENTRIES,
            options.max_message_size,
        );
        if fifo {
            for batch in chunks {
                outcomes.extend(self.send_chunk(&url, batch, envelopes).await);
            }
        } else {
            let sent = join_all(
                chunks
                    .into_iter()
                    .map(|b| self.send_chunk(&url, b, envelopes)),
            );
            outcomes.extend(sent.await.into_iter().flatten());
        }
        outcomes
    }

    /// Sends one chunk; when SQS refuses the whole call as malformed, sends
    /// its messages one per call so only the culprit fails.
    async fn send_chunk(
        &self,
        url: &str,
        batch: Vec<Outgoing>,
        envelopes: &[Envelope],
    ) -> Vec<Outcome> {
        let failure = match self.send(url, &batch, envelopes).await {
            Ok(outcomes) => return outcomes,
            Err(failure) => failure,
        };
        if batch.len() > 1 && matches!(failure.kind, Kind::Rejected | Kind::TooLarge) {
            tracing::info!(messaging.system = "aws_sqs", error = %failure.describe(), "batch refused, sending its messages one by one");
            let mut outcomes = Vec::with_capacity(batch.len());
            for out in batch {
                let one = std::slice::from_ref(&out);
                match self.send(url, one, envelopes).await {
                    Ok(sent) => outcomes.extend(sent),
                    Err(failure) => outcomes.push(self.failed(&out, failure, envelopes)),
                }
            }
            return outcomes;
        }
        if let (Kind::QueueMissing, Some(out)) = (failure.kind, batch.first()) {
            self.inner.queues.forget(&envelopes[out.index].destination);
        }
        batch
            .iter()
            .map(|out| self.failed(out, failure.copy(), envelopes))
            .collect()
    }

    /// One `SendMessageBatch` call and the result of each of its entries.
    async fn send(
        &self,
        url: &str,
        batch: &[Outgoing],
        envelopes: &[Envelope],
    ) -> Result<Vec<Outcome>, Failure> {
        let request = self
            .inner
            .queues
            .client()
            .send_message_batch()
            .queue_url(url)
            .set_entries(Some(batch.iter().map(|o| o.entry.clone()).collect()))
            .send();
        let output = call(self.inner.options.request_timeout, request).await?;
        let mut outcomes: HashMap<&str, Result<(), PublishError>> = HashMap::new();
        for ok in output.successful() {
            outcomes.insert(ok.id(), Ok(()));
        }
        let by_id: HashMap<&str, &Outgoing> = batch.iter().map(|o| (o.entry.id(), o)).collect();
        for failed in output.failed() {
            if let Some(out) = by_id.get(failed.id()) {
                let failure = entry_failure(
                    failed.code(),
                    failed.message().unwrap_or_default(),
                    failed.sender_fault(),
                );
                outcomes.insert(failed.id(), self.failed(out, failure, envelopes).1);
            }
        }
        Ok(batch
            .iter()
            .map(|out| {
                let outcome = outcomes.remove(out.entry.id()).unwrap_or_else(|| {
                    Err(PublishError::Refused {
                        reason: "sqs answered without a result for the message".to_owned(),
                    })
                });
                (out.index, outcome)
            })
            .collect())
    }

    fn failed(&self, out: &Outgoing, failure: Failure, envelopes: &[Envelope]) -> Outcome {
        let envelope = &envelopes[out.index];
        let error = publish_error(
            failure,
            &envelope.destination,
            out.size,
            self.inner.options.max_message_size,
        );
        (out.index, Err(error))
    }

    fn error(&self, failure: Failure, envelope: &Envelope) -> PublishError {
        if failure.kind == Kind::QueueMissing {
            self.inner.queues.forget(&envelope.destination);
        }
        publish_error(
            failure,
            &envelope.destination,
            envelope.payload.len(),
            self.inner.options.max_message_size,
        )
    }
}

impl Publisher for SqsPublisher {
    async fn send(&self, batch: PublishBatch<'_>) -> Vec<Result<(), PublishError>> {
        self.publish_all(batch.envelopes()).await
    }

    fn messaging_system(&self) -> &'static str {
        "aws_sqs"
    }
}
