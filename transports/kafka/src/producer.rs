//! One idempotent librdkafka producer, shared by the publisher and by the
//! source's retry and dead-letter republishing, and the cache of topics it
//! knows to exist.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::OwnedHeaders;
use rdkafka::producer::{DeliveryFuture, FutureProducer, FutureRecord, Producer as _};
use tidings_core::PublishError;

use crate::error::{ClientError, ConnectError, failed_connect, failed_publish, publish_error};
use crate::options::{ClientOptions, PublisherOptions};
use crate::watch::Watch;

/// How long a topic found to exist is trusted without asking again.
const KNOWN_FOR: Duration = Duration::from_secs(60);
/// The pause before trying again when librdkafka's send queue is full.
const QUEUE_FULL_PAUSE: Duration = Duration::from_millis(5);

/// A record to send.
pub(crate) struct Outgoing<'a> {
    pub(crate) topic: &'a str,
    pub(crate) key: Option<&'a [u8]>,
    pub(crate) payload: &'a [u8],
    pub(crate) headers: OwnedHeaders,
    /// The record's size as the size checks count it.
    pub(crate) size: usize,
}

/// The shared producer.
#[derive(Clone)]
pub(crate) struct Producer {
    producer: FutureProducer<Watch>,
    watch: Watch,
    brokers: String,
    known: Arc<Mutex<HashMap<String, Instant>>>,
    request_timeout: Duration,
    max_message_bytes: usize,
}

impl std::fmt::Debug for Producer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Producer")
            .field("max_message_bytes", &self.max_message_bytes)
            .finish_non_exhaustive()
    }
}

impl Producer {
    pub(crate) fn new(
        client: &ClientOptions,
        options: &PublisherOptions,
    ) -> Result<Self, ClientError> {
        let config = client.config(&options.producer_properties());
        let watch = Watch::new(&config);
        let producer = config
            .create_with_context(watch.clone())
            .map_err(ClientError::Config)?;
        Ok(Self {
            producer,
            watch,
            brokers: client.brokers.clone(),
            known: Arc::default(),
            request_timeout: client.request_timeout,
            max_message_bytes: options.max_message_bytes,
        })
    }

    /// The watch on this producer's connections.
    pub(crate) fn watch(&self) -> &Watch {
        &self.watch
    }

    /// Asks the brokers for their metadata once: fails at once on a TLS or
    /// SASL failure, or after the request timeout when no broker answers.
    pub(crate) async fn connect(&self) -> Result<(), ConnectError> {
        let producer = self.producer.clone();
        let timeout = self.request_timeout;
        self.watch
            .request(move || producer.client().fetch_metadata(None, timeout))
            .await
            .map(drop)
            .map_err(|failed| failed_connect(failed, &self.brokers))
    }

    /// Fails with `Unroutable` unless `topic` exists. A topic found once is
    /// trusted for a minute; a missing one is asked about every time, so it
    /// is found as soon as it is created.
    pub(crate) async fn check_topic(&self, topic: &str) -> Result<(), PublishError> {
        if let Some(at) = self.known.lock().expect("topic cache").get(topic) {
            if at.elapsed() < KNOWN_FOR {
                return Ok(());
            }
        }
        let producer = self.producer.clone();
        let name = topic.to_owned();
        let timeout = self.request_timeout;
        let metadata = self
            .watch
            .request(move || producer.client().fetch_metadata(Some(&name), timeout))
            .await
            .map_err(|failed| failed_publish(failed, topic, 0, self.max_message_bytes))?;
        let unroutable = || PublishError::Unroutable {
            destination: topic.to_owned(),
        };
        let Some(found) = metadata.topics().iter().find(|t| t.name() == topic) else {
            return Err(unroutable());
        };
        match found.error().map(RDKafkaErrorCode::from) {
            None if !found.partitions().is_empty() => {}
            None
            | Some(RDKafkaErrorCode::UnknownTopicOrPartition | RDKafkaErrorCode::UnknownTopic) => {
                return Err(unroutable());
            }
            // The topic exists but cannot be written now (no leader yet,
            // for example): a transient failure, never a reason to fail
            // the event for good.
            Some(code) => {
                return Err(PublishError::Unavailable(
                    format!("topic {topic:?} is not available: {code}").into(),
                ));
            }
        }
        self.known
            .lock()
            .expect("topic cache")
            .insert(topic.to_owned(), Instant::now());
        Ok(())
    }

    /// Hands a record to librdkafka; the returned future resolves when the
    /// brokers acknowledged it. Refuses records over the size limit at once.
    pub(crate) async fn enqueue(
        &self,
        record: Outgoing<'_>,
    ) -> Result<DeliveryFuture, PublishError> {
        if record.size > self.max_message_bytes {
            return Err(PublishError::TooLarge {
                size: record.size,
                limit: self.max_message_bytes,
            });
        }
        loop {
            let mut future = FutureRecord::to(record.topic)
                .payload(record.payload)
                .headers(record.headers.clone());
            if let Some(key) = record.key {
                future = future.key(key);
            }
            match self.producer.send_result(future) {
                Ok(delivery) => return Ok(delivery),
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                    tokio::time::sleep(QUEUE_FULL_PAUSE).await;
                }
                Err((error, _)) => {
                    return Err(publish_error(
                        error,
                        record.topic,
                        record.size,
                        self.max_message_bytes,
                    ));
                }
            }
        }
    }

    /// Waits for the brokers' acknowledgement of an enqueued record.
    pub(crate) async fn acknowledged(
        &self,
        delivery: DeliveryFuture,
        topic: &str,
        size: usize,
    ) -> Result<(), PublishError> {
        match delivery.await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err((error, _))) => {
                let error = publish_error(error, topic, size, self.max_message_bytes);
                // A record that timed out while a handshake or login
                // failed says why.
                match self.watch.recent() {
                    Some(failure) if error.is_transient() => {
                        Err(PublishError::Unavailable(Box::new(failure)))
                    }
                    _ => Err(error),
                }
            }
            Err(canceled) => Err(PublishError::Transport(Box::new(canceled))),
        }
    }

    /// Sends one record and waits for its acknowledgement.
    pub(crate) async fn send(&self, record: Outgoing<'_>) -> Result<(), PublishError> {
        let (topic, size) = (record.topic, record.size);
        self.check_topic(topic).await?;
        let delivery = self.enqueue(record).await?;
        self.acknowledged(delivery, topic, size).await
    }
}
