//! Consuming a queue by long polling.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::{Message, MessageSystemAttributeName};
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use tidings_core::{Acker, Delivery, Source, SourceError};

use crate::acker::SqsAcker;
use crate::attributes;
use crate::context::QueueContext;
use crate::error::{Failure, call, source_error};
use crate::heartbeat::Heartbeat;
use crate::options::{SourceOptions, whole_seconds};
use crate::queues::Queues;

/// Consumes SQS queues by long polling `ReceiveMessage`.
///
/// Each call asks for up to [`SourceOptions::max_messages`] messages with
/// all their attributes; `ApproximateReceiveCount` is the delivery count.
/// From the moment a message is received until it is settled or dropped,
/// a heartbeat extends its visibility timeout, so a slow handler does not
/// see its message delivered to another consumer. Messages received but
/// not yet yielded are made visible again when the stream is dropped.
///
/// Dead-lettering sends a copy with the reason to the queue's dead-letter
/// queue — the one given in [`SourceOptions::dead_letter_queue`], else the
/// target of the queue's redrive policy — then deletes the original.
/// Messages whose attributes do not form an envelope are dead-lettered
/// that way too and never yielded.
///
/// When a call fails, the stream yields the error and, polled again, tries
/// again after [`SourceOptions::retry_backoff`]; it ends after
/// [`SourceError::NotFound`] when the queue is gone.
#[derive(Clone)]
pub struct SqsSource {
    queues: Queues,
    options: Arc<SourceOptions>,
}

impl std::fmt::Debug for SqsSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqsSource")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl SqsSource {
    /// A source over `client`.
    ///
    /// ```
    /// use tidings_sqs::{SourceOptions, SqsSource, local_client};
    ///
    /// let client = local_client("http://127.0.0.1:9324");
    /// let source = SqsSource::new(client, SourceOptions::default());
    /// # drop(source);
    /// ```
    pub fn new(client: Client, options: SourceOptions) -> Self {
        Self {
            queues: Queues::new(client),
            options: Arc::new(options),
        }
    }
}

impl Source for SqsSource {
    type Acker = SqsAcker;
    type Stream = SqsStream;

    fn messaging_system(&self) -> &'static str {
        "aws_sqs"
    }

    async fn subscribe(&self, queue: &str) -> Result<SqsStream, SourceError> {
        let options = &self.options;
        let dead_letter = options.dead_letter_queues.get(queue).map(String::as_str);
        let info = self
            .queues
            .info(queue, dead_letter, options.request_timeout)
            .await
            .map_err(|f| source_error(f, queue))?;
        let client = self.queues.client().clone();
        let ctx = Arc::new(QueueContext::new(
            client,
            info,
            SourceOptions::clone(options),
        ));
        tracing::debug!(
            messaging.system = "aws_sqs",
            messaging.destination.name = queue,
            visibility_timeout = ?ctx.visibility,
            dead_letter_queue = ctx.queue.dead_letter.as_ref().map(|t| t.name.as_str()),
            "subscribed"
        );
        let state = State {
            ctx,
            buffer: VecDeque::new(),
            failures: 0,
            ended: false,
        };
        Ok(SqsStream {
            inner: futures::stream::unfold(state, next).boxed(),
        })
    }
}

type Item = Result<Delivery<SqsAcker>, SourceError>;

struct State {
    ctx: Arc<QueueContext>,
    /// Received and not yet yielded; dropping them releases the messages.
    buffer: VecDeque<Delivery<SqsAcker>>,
    failures: u32,
    ended: bool,
}

async fn next(mut state: State) -> Option<(Item, State)> {
    loop {
        if let Some(delivery) = state.buffer.pop_front() {
            return Some((Ok(delivery), state));
        }
        if state.ended {
            return None;
        }
        if state.failures > 0 {
            let delay = state.ctx.options.retry_backoff.delay(state.failures);
            tokio::time::sleep(delay).await;
        }
        match receive(&state.ctx).await {
            Ok(messages) => {
                state.failures = 0;
                for message in messages {
                    if let Some(delivery) = into_delivery(&state.ctx, message).await {
                        state.buffer.push_back(delivery);
                    }
                }
            }
            Err(failure) => {
                state.failures += 1;
                tracing::error!(
                    messaging.system = "aws_sqs",
                    messaging.destination.name = state.ctx.name(),
                    error = %failure.describe(),
                    "receiving failed"
                );
                let error = source_error(failure, state.ctx.name());
                state.ended = matches!(error, SourceError::NotFound { .. });
                return Some((Err(error), state));
            }
        }
    }
}

/// One long poll.
async fn receive(ctx: &QueueContext) -> Result<Vec<Message>, Failure> {
    let options = &ctx.options;
    let request = ctx
        .client
        .receive_message()
        .queue_url(&ctx.queue.url)
        .max_number_of_messages(options.max_messages)
        .wait_time_seconds(whole_seconds(options.wait_time))
        .set_visibility_timeout(options.visibility_timeout.map(whole_seconds))
        .message_attribute_names("All")
        .message_system_attribute_names(MessageSystemAttributeName::All)
        .send();
    let output = call(options.wait_time + options.request_timeout, request).await?;
    Ok(output.messages.unwrap_or_default())
}

/// The message as a delivery, or `None` once an unreadable message has been
/// dead-lettered.
async fn into_delivery(ctx: &Arc<QueueContext>, message: Message) -> Option<Delivery<SqsAcker>> {
    let Some(receipt) = message.receipt_handle().map(Arc::<str>::from) else {
        tracing::warn!(
            messaging.system = "aws_sqs",
            messaging.destination.name = ctx.name(),
            "message without a receipt handle skipped"
        );
        return None;
    };
    let count = message
        .attributes()
        .and_then(|a| a.get(&MessageSystemAttributeName::ApproximateReceiveCount))
        .and_then(|c| c.parse().ok());
    let decoded = attributes::decode(
        message.body().unwrap_or_default(),
        message.message_attributes(),
    );
    let id = match &decoded {
        Ok(envelope) => envelope.event_id.to_string(),
        Err(_) => message.message_id().unwrap_or_default().to_owned(),
    };
    let heartbeat = Heartbeat::start(ctx.clone(), receipt.clone(), id.clone());
    let acker = SqsAcker::new(ctx.clone(), message, receipt, id.clone(), heartbeat);
    match decoded {
        Ok(envelope) => {
            tracing::debug!(
                messaging.system = "aws_sqs",
                messaging.destination.name = ctx.name(),
                messaging.message.id = %id,
                delivery_count = count,
                "received"
            );
            Some(Delivery::new(envelope, count, acker))
        }
        Err(error) => {
            let reason = format!(
                "not a tidings envelope: {}",
                tidings_core::port::error_chain(&error)
            );
            tracing::warn!(messaging.system = "aws_sqs", messaging.destination.name = ctx.name(), messaging.message.id = %id, %reason, "dead-lettering");
            if let Err(error) = acker.dead_letter(reason).await {
                tracing::error!(messaging.system = "aws_sqs", messaging.destination.name = ctx.name(), messaging.message.id = %id, error = %error, "cannot dead-letter an unreadable message");
            }
            None
        }
    }
}

/// The deliveries of one queue; see [`SqsSource`].
pub struct SqsStream {
    inner: BoxStream<'static, Item>,
}

impl std::fmt::Debug for SqsStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SqsStream")
    }
}

impl Stream for SqsStream {
    type Item = Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Item>> {
        self.inner.poll_next_unpin(cx)
    }
}
