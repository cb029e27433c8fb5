//! Consuming a topic in a consumer group.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use futures::Stream;
use rdkafka::consumer::{BaseConsumer, Consumer as _};
use tidings_core::{Delivery, PublishError, Source, SourceError};
use tokio::sync::{mpsc, watch};

use crate::acker::{KafkaAcker, Settling};
use crate::context::Context;
use crate::error::{ClientError, ConnectError};
use crate::names::{dead_letter_topic, retry_topic, validate_topic};
use crate::offsets::Offsets;
use crate::options::{ClientOptions, SourceOptions};
use crate::poll::{Item, PollLoop, Seen};
use crate::producer::Producer;
use crate::watch::Watch;

/// How long a new subscription waits for the source's dropped consumers to
/// leave their groups.
const LEAVE_TIMEOUT: Duration = Duration::from_secs(30);

/// Consumes topics as a member of a consumer group, together with each
/// topic's retry topic.
///
/// Offsets are committed by the source, never automatically, and only up to
/// the lowest offset of each partition whose delivery is unsettled; a
/// consumer that dies, or loses a partition in a rebalance, leaves its
/// unsettled records and those after them to be delivered again. See the
/// crate docs for nacks, retries and dead-lettering.
///
/// ```no_run
/// use tidings_kafka::{ClientOptions, KafkaSource, SourceOptions};
///
/// let client = ClientOptions::new("127.0.0.1:9092");
/// let source = KafkaSource::new(&client, SourceOptions::new("billing"))?;
/// # Ok::<(), tidings_kafka::ClientError>(())
/// ```
#[derive(Debug, Clone)]
pub struct KafkaSource {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    client: ClientOptions,
    options: SourceOptions,
    producer: Producer,
    seen: Arc<Seen>,
    consumers: Mutex<Vec<Member>>,
}

/// A consumer this source started, and whether it has left its group.
#[derive(Debug)]
struct Member {
    sender: mpsc::WeakSender<Item>,
    left: watch::Receiver<bool>,
}

impl Member {
    /// Whether its stream was dropped but it has not left the group yet.
    fn leaving(&self) -> bool {
        let dropped = self.sender.upgrade().is_none_or(|s| s.is_closed());
        dropped && !*self.left.borrow()
    }
}

impl KafkaSource {
    /// A source for the group of `options` on the brokers of `client`.
    /// Connects when subscribing.
    ///
    /// # Errors
    ///
    /// librdkafka refused the configuration of the consumer or of the
    /// producer that writes retry and dead-letter records.
    pub fn new(client: &ClientOptions, options: SourceOptions) -> Result<Self, ClientError> {
        let producer = Producer::new(client, &options.publisher)?;
        // A configuration librdkafka refuses fails here, once, rather than
        // at every subscription.
        let _probe: BaseConsumer = client
            .config(&options.consumer_properties())
            .create()
            .map_err(ClientError::Config)?;
        Ok(Self {
            inner: Arc::new(Inner {
                client: client.clone(),
                options,
                producer,
                seen: Arc::default(),
                consumers: Mutex::default(),
            }),
        })
    }

    /// Waits until the consumers whose streams were dropped have left
    /// their groups. A member joining while another leaves can stall the
    /// group's rebalance on some brokers, and a consumer that resubscribes
    /// should find the partitions its old stream gave up.
    async fn await_departures(&self) {
        let leaving: Vec<watch::Receiver<bool>> = {
            let mut consumers = self.inner.consumers.lock().expect("consumers");
            consumers.retain(|c| !*c.left.borrow());
            consumers
                .iter()
                .filter(|c| c.leaving())
                .map(|c| c.left.clone())
                .collect()
        };
        for mut left in leaving {
            let wait = left.wait_for(|left| *left);
            if tokio::time::timeout(LEAVE_TIMEOUT, wait).await.is_err() {
                tracing::warn!("a dropped consumer is slow to leave its group; subscribing anyway");
            }
        }
    }

    /// Asks the brokers for their metadata once, so a service fails at
    /// startup rather than retrying its subscriptions.
    ///
    /// # Errors
    ///
    /// [`ConnectError::Security`] at once when TLS or SASL fails, its
    /// message naming the setting to fix; [`ConnectError::Unreachable`]
    /// when no broker answers within the request timeout.
    pub async fn connect(&self) -> Result<(), ConnectError> {
        self.inner.producer.connect().await
    }

    /// Whether `topic` exists, asked of the brokers.
    async fn exists(&self, topic: &str) -> Result<bool, SourceError> {
        match self.inner.producer.check_topic(topic).await {
            Ok(()) => Ok(true),
            Err(PublishError::Unroutable { .. }) => Ok(false),
            Err(PublishError::Unavailable(e)) => Err(SourceError::Unavailable(e)),
            Err(other) => Err(SourceError::Transport(Box::new(other))),
        }
    }
}

impl Source for KafkaSource {
    type Acker = KafkaAcker;
    type Stream = KafkaStream;

    /// Joins the group on `queue` and, where it exists, its retry topic.
    fn messaging_system(&self) -> &'static str {
        "kafka"
    }

    async fn subscribe(&self, queue: &str) -> Result<KafkaStream, SourceError> {
        let not_found = || SourceError::NotFound {
            queue: queue.to_owned(),
        };
        validate_topic(queue).map_err(|_| not_found())?;
        self.await_departures().await;
        if !self.exists(queue).await? {
            return Err(not_found());
        }
        let retry = retry_topic(queue);
        let mut topics = vec![queue.to_owned()];
        if self.exists(&retry).await? {
            topics.push(retry.clone());
        } else {
            tracing::warn!(
                messaging.destination.name = queue,
                retry_topic = %retry,
                "the topic has no retry topic: nacks will fail and leave their records uncommitted"
            );
        }
        let inner = &self.inner;
        let offsets = Arc::new(Mutex::new(Offsets::default()));
        let config = inner.client.config(&inner.options.consumer_properties());
        let context = Context {
            offsets: offsets.clone(),
            revoke_grace: inner.options.revoke_grace,
            request_timeout: inner.client.request_timeout,
            watch: Watch::new(&config),
        };
        let consumer: BaseConsumer<Context> = config
            .create_with_context(context)
            .map_err(|e| SourceError::Transport(Box::new(e)))?;
        let names: Vec<&str> = topics.iter().map(String::as_str).collect();
        consumer
            .subscribe(&names)
            .map_err(|e| crate::error::source_error(e, queue))?;
        let (sender, receiver) = mpsc::channel(inner.options.prefetch);
        let (left_sender, left) = watch::channel(false);
        inner.consumers.lock().expect("consumers").push(Member {
            sender: sender.downgrade(),
            left,
        });
        let settling = Arc::new(Settling {
            offsets: offsets.clone(),
            producer: inner.producer.clone(),
            retry_topic: retry,
            dead_letter_topic: dead_letter_topic(queue),
        });
        PollLoop {
            consumer,
            sender,
            settling,
            seen: inner.seen.clone(),
            options: inner.options.clone(),
            runtime: tokio::runtime::Handle::current(),
            left: left_sender,
        }
        .start(queue);
        tracing::debug!(messaging.destination.name = queue, group = %inner.options.group, "subscribed");
        Ok(KafkaStream { receiver, offsets })
    }
}

/// The deliveries of one subscription. Dropping it leaves the group, after
/// committing what was settled.
#[derive(Debug)]
pub struct KafkaStream {
    receiver: mpsc::Receiver<Item>,
    offsets: Arc<Mutex<Offsets>>,
}

impl Stream for KafkaStream {
    type Item = Result<Delivery<KafkaAcker>, SourceError>;

    /// Skips deliveries read ahead from partitions revoked since: their
    /// next owner delivers them.
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        loop {
            match self.receiver.poll_recv(cx) {
                Poll::Ready(Some(Ok((ticket, delivery)))) => {
                    if self.offsets.lock().expect("offsets").is_current(&ticket) {
                        return Poll::Ready(Some(Ok(delivery)));
                    }
                }
                Poll::Ready(Some(Err(error))) => return Poll::Ready(Some(Err(error))),
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}
