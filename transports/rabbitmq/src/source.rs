//! Consuming a queue as a stream of deliveries that survives reconnects.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use lapin::options::{
    BasicCancelOptions, BasicConsumeOptions, BasicNackOptions, BasicQosOptions,
    ConfirmSelectOptions,
};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{Channel, Consumer};
use tidings_core::{Delivery, Source, SourceError};

use crate::ack_window::AckWindow;
use crate::acker::{RabbitAcker, Received, dead_letter_unreadable};
use crate::connection::Connector;
use crate::count::delivery_count;
use crate::error::source_error;
use crate::options::{ConnectionOptions, SourceOptions, StreamOffset};
use crate::properties::decode;

/// Consumes RabbitMQ queues.
///
/// Each subscription has its own channel with a prefetch limit
/// ([`SourceOptions::prefetch`]). When the connection drops, the stream
/// yields one [`SourceError::Unavailable`], then reconnects with backoff on
/// its own and goes on; deliveries left unsettled on the old connection are
/// redelivered by the broker, and their ackers fail with
/// [`AckError::Expired`](tidings_core::AckError::Expired) or
/// [`AckError::Unavailable`](tidings_core::AckError::Unavailable) instead of
/// settling anything on the new one. The stream ends after
/// [`SourceError::NotFound`] when the queue is gone.
///
/// Messages whose headers do not form an envelope are dead-lettered with
/// the reason and never yielded.
#[derive(Clone)]
pub struct RabbitSource {
    connector: Connector,
    options: SourceOptions,
}

impl std::fmt::Debug for RabbitSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RabbitSource")
            .field("connection", self.connector.options())
            .field("options", &self.options)
            .finish()
    }
}

impl RabbitSource {
    /// A source with its own connection, opened on first subscribe.
    ///
    /// ```
    /// use tidings_rabbitmq::{ConnectionOptions, RabbitSource, SourceOptions};
    ///
    /// let connection = ConnectionOptions::new("amqp://guest:guest@127.0.0.1:5672/%2f")
    ///     .connection_name("billing");
    /// let source = RabbitSource::new(connection, SourceOptions::default());
    /// # drop(source);
    /// ```
    pub fn new(connection: ConnectionOptions, options: SourceOptions) -> Self {
        Self::on(Connector::new(connection), options)
    }

    /// A source on `connector`'s connection.
    pub(crate) fn on(connector: Connector, options: SourceOptions) -> Self {
        Self { connector, options }
    }

    async fn open(&self, queue: &str) -> Result<Subscription, lapin::Error> {
        let channel = self.connector.channel().await?;
        channel
            .basic_qos(self.options.prefetch, BasicQosOptions::default())
            .await?;
        channel
            .confirm_select(ConfirmSelectOptions::default())
            .await?;
        let consumer = channel
            .basic_consume(
                queue.into(),
                "".into(),
                BasicConsumeOptions::default(),
                consume_arguments(&self.options),
            )
            .await?;
        tracing::debug!(
            messaging.system = "rabbitmq",
            messaging.destination.name = queue,
            "subscribed"
        );
        Ok(Subscription {
            channel,
            consumer,
            window: AckWindow::start(self.options.prefetch),
        })
    }
}

/// The consumer's arguments: a stream's starting offset.
fn consume_arguments(options: &SourceOptions) -> FieldTable {
    let mut args = FieldTable::default();
    let offset = match options.stream_offset {
        None => return args,
        Some(StreamOffset::First) => AMQPValue::LongString("first".into()),
        Some(StreamOffset::Last) => AMQPValue::LongString("last".into()),
        Some(StreamOffset::Next) => AMQPValue::LongString("next".into()),
        Some(StreamOffset::Offset(offset)) => {
            AMQPValue::LongLongInt(i64::try_from(offset).unwrap_or(i64::MAX))
        }
    };
    args.insert("x-stream-offset".into(), offset);
    args
}

impl Source for RabbitSource {
    type Acker = RabbitAcker;
    type Stream = RabbitStream;

    fn messaging_system(&self) -> &'static str {
        "rabbitmq"
    }

    async fn subscribe(&self, queue: &str) -> Result<RabbitStream, SourceError> {
        if lapin::types::ShortString::try_new(queue).is_err() {
            return Err(SourceError::NotFound {
                queue: queue.to_owned(),
            });
        }
        let subscription = self.open(queue).await.map_err(|e| source_error(e, queue))?;
        let state = State {
            source: self.clone(),
            queue: Arc::from(queue),
            current: Some(subscription),
            failures: 0,
            ended: false,
        };
        Ok(RabbitStream {
            inner: futures::stream::unfold(state, next).boxed(),
        })
    }
}

/// How long a dropped subscription spends returning the deliveries it had
/// prefetched but not yielded.
const RELEASE_TIMEOUT: Duration = Duration::from_secs(5);

/// A consumer, the channel it lives on and the channel's unsettled
/// deliveries.
struct Subscription {
    channel: Channel,
    consumer: Consumer,
    window: AckWindow,
}

impl Drop for Subscription {
    /// Cancels the consumer and requeues what it prefetched but never
    /// yielded, so those messages go to other consumers at once. The
    /// channel stays open while deliveries already yielded are unsettled,
    /// so they can still be settled after the stream is gone.
    fn drop(&mut self) {
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(release(self.channel.clone(), self.consumer.clone()));
        }
    }
}

async fn release(channel: Channel, mut consumer: Consumer) {
    if !channel.status().connected() {
        return;
    }
    let cancelled = channel
        .basic_cancel(consumer.tag(), BasicCancelOptions::default())
        .await;
    if cancelled.is_err() {
        return;
    }
    let requeue = BasicNackOptions {
        multiple: false,
        requeue: true,
    };
    let drain = async {
        while let Some(Ok(delivery)) = consumer.next().await {
            let _ = delivery.acker.nack(requeue).await;
        }
    };
    let _ = tokio::time::timeout(RELEASE_TIMEOUT, drain).await;
}

struct State {
    source: RabbitSource,
    queue: Arc<str>,
    current: Option<Subscription>,
    failures: u32,
    ended: bool,
}

type Item = Result<Delivery<RabbitAcker>, SourceError>;

async fn next(mut state: State) -> Option<(Item, State)> {
    if state.ended {
        return None;
    }
    loop {
        let Some(sub) = state.current.as_mut() else {
            if let Err(error) = resubscribe(&mut state).await {
                state.ended = true;
                return Some((Err(error), state));
            }
            continue;
        };
        match sub.consumer.next().await {
            Some(Ok(delivery)) if !delivery.acker.usable() => {
                // Prefetched before the channel closed: it can no longer be
                // settled, and the broker redelivers it.
                tracing::debug!(messaging.system = "rabbitmq", messaging.destination.name = %state.queue, "skipping a delivery of a closed channel");
            }
            Some(Ok(delivery)) => {
                let channel = (sub.channel.clone(), sub.window.clone());
                if let Some(delivery) = into_delivery(&state, channel, delivery).await {
                    return Some((Ok(delivery), state));
                }
            }
            Some(Err(error)) => {
                state.current = None;
                tracing::error!(messaging.system = "rabbitmq", messaging.destination.name = %state.queue, error = %error, "consuming stopped, resubscribing");
                return Some((Err(source_error(error, &state.queue)), state));
            }
            None => {
                tracing::info!(messaging.system = "rabbitmq", messaging.destination.name = %state.queue, "consumer cancelled, resubscribing");
                state.current = None;
            }
        }
    }
}

/// Subscribes again, with backoff, until it works or the queue is gone.
async fn resubscribe(state: &mut State) -> Result<(), SourceError> {
    loop {
        state.failures += 1;
        let delay = state
            .source
            .connector
            .options()
            .reconnect_backoff
            .delay(state.failures);
        tokio::time::sleep(delay).await;
        match state.source.open(&state.queue).await {
            Ok(sub) => {
                tracing::info!(messaging.system = "rabbitmq", messaging.destination.name = %state.queue, "resubscribed");
                state.current = Some(sub);
                state.failures = 0;
                return Ok(());
            }
            Err(error) => match source_error(error, &state.queue) {
                SourceError::NotFound { queue } => return Err(SourceError::NotFound { queue }),
                other => {
                    tracing::error!(messaging.system = "rabbitmq", messaging.destination.name = %state.queue, error = %other, retry_in = ?delay, "cannot resubscribe")
                }
            },
        }
    }
}

/// The delivery as the port's delivery, or `None` once an unreadable
/// message has been dead-lettered.
async fn into_delivery(
    state: &State,
    (channel, window): (Channel, AckWindow),
    delivery: lapin::message::Delivery,
) -> Option<Delivery<RabbitAcker>> {
    let body = Bytes::from(delivery.data);
    let count = delivery_count(&delivery.properties, delivery.redelivered, &state.queue);
    let decoded = decode(&delivery.properties, body.clone());
    let received = Received {
        tag: delivery.delivery_tag,
        window,
        queue: state.queue.clone(),
        properties: delivery.properties,
        body,
        delivery_count: count,
        confirm_timeout: state.source.options.confirm_timeout,
    };
    let acker = RabbitAcker::new(channel, delivery.acker, received);
    match decoded {
        Ok(envelope) => {
            tracing::debug!(
                messaging.system = "rabbitmq",
                messaging.destination.name = %state.queue,
                messaging.message.id = %envelope.event_id,
                delivery_count = count,
                "received"
            );
            Some(Delivery::new(envelope, Some(count), acker))
        }
        Err(error) => {
            let reason = format!("not a tidings envelope: {error}");
            tracing::warn!(messaging.system = "rabbitmq", messaging.destination.name = %state.queue, %reason, "dead-lettering");
            dead_letter_unreadable(acker, &reason).await;
            None
        }
    }
}

/// The deliveries of one queue; see [`RabbitSource`].
pub struct RabbitStream {
    inner: BoxStream<'static, Item>,
}

impl std::fmt::Debug for RabbitStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RabbitStream")
    }
}

impl Stream for RabbitStream {
    type Item = Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Item>> {
        self.inner.poll_next_unpin(cx)
    }
}
