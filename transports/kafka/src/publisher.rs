//! Publishing envelopes as Kafka records.

use std::collections::HashMap;

use futures::future::join_all;
use tidings_core::port::error_chain;
use tidings_core::port::trace_outcome;
use tidings_core::{Envelope, PublishBatch, PublishError, Publisher};

use crate::error::{ClientError, ConnectError, SecurityError};
use crate::names::validate_topic;
use crate::options::{ClientOptions, PublisherOptions};
use crate::producer::{Outgoing, Producer};
use crate::record;

/// Publishes envelopes to the topic named by their destination, through an
/// idempotent producer (`enable.idempotence`, `acks=all`): `Ok` means every
/// in-sync replica has the record, and librdkafka's retries never write it
/// twice or out of order.
///
/// The ordering key is the record key, so the events of one key land in
/// one partition in the order published. Topics are never created on the
/// fly: a destination that does not exist fails with `Unroutable` (see
/// [`Topology`](crate::Topology)).
///
/// ```no_run
/// use tidings_kafka::{ClientOptions, KafkaPublisher, PublisherOptions};
///
/// let client = ClientOptions::new("127.0.0.1:9092");
/// let publisher = KafkaPublisher::new(&client, PublisherOptions::default())?;
/// # Ok::<(), tidings_kafka::ClientError>(())
/// ```
#[derive(Debug, Clone)]
pub struct KafkaPublisher {
    producer: Producer,
}

impl KafkaPublisher {
    /// A publisher for the brokers of `client`. Connects lazily.
    ///
    /// # Errors
    ///
    /// librdkafka refused the configuration.
    pub fn new(client: &ClientOptions, options: PublisherOptions) -> Result<Self, ClientError> {
        Ok(Self {
            producer: Producer::new(client, &options)?,
        })
    }

    /// Asks the brokers for their metadata once, so a service fails at
    /// startup rather than retrying its publishes: call it before running
    /// a relay.
    ///
    /// # Errors
    ///
    /// [`ConnectError::Security`] at once when TLS or SASL fails (a wrong
    /// CA, an expired broker certificate, a refused client certificate or
    /// password), its message naming the setting to fix;
    /// [`ConnectError::Unreachable`] when no broker answers within the
    /// request timeout.
    ///
    /// ```no_run
    /// use tidings_kafka::{ClientOptions, KafkaPublisher, KafkaTls, PublisherOptions};
    ///
    /// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
    /// let client = ClientOptions::new("kafka.example.com:9093")
    ///     .tls(KafkaTls::default().ca_file("/etc/kafka/ca.pem"));
    /// let publisher = KafkaPublisher::new(&client, PublisherOptions::default())?;
    /// publisher.connect().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn connect(&self) -> Result<(), ConnectError> {
        self.producer.connect().await
    }

    /// Encodes `envelope` and hands it to librdkafka, after checking its
    /// topic.
    async fn enqueue(
        &self,
        envelope: &Envelope,
        topic_checked: Result<(), PublishError>,
    ) -> Result<(rdkafka::producer::DeliveryFuture, usize), PublishError> {
        topic_checked?;
        let headers = record::encode(envelope)?;
        let size = record::encoded_size(envelope, &headers);
        let outgoing = Outgoing {
            topic: &envelope.destination,
            key: envelope.ordering_key.as_deref().map(str::as_bytes),
            payload: &envelope.payload,
            headers,
            size,
        };
        Ok((self.producer.enqueue(outgoing).await?, size))
    }

    /// Checks each distinct destination once.
    async fn check_topics(&self, envelopes: &[Envelope]) -> HashMap<String, TopicCheck> {
        let mut checked = HashMap::new();
        for envelope in envelopes {
            let topic = &envelope.destination;
            if checked.contains_key(topic) {
                continue;
            }
            let check = match validate_topic(topic) {
                Err(reason) => TopicCheck::Illegal(reason),
                Ok(()) => match self.producer.check_topic(topic).await {
                    Ok(()) => TopicCheck::Exists,
                    Err(PublishError::Unroutable { .. }) => TopicCheck::Missing,
                    Err(PublishError::Unavailable(source)) => {
                        match source.downcast::<SecurityError>() {
                            Ok(failure) => TopicCheck::Refused(*failure),
                            Err(source) => {
                                TopicCheck::Unknown(error_chain(&PublishError::Unavailable(source)))
                            }
                        }
                    }
                    Err(other) => TopicCheck::Unknown(error_chain(&other)),
                },
            };
            checked.insert(topic.clone(), check);
        }
        checked
    }
}

/// What is known of a destination topic before publishing to it.
enum TopicCheck {
    Exists,
    Missing,
    Illegal(String),
    /// TLS or SASL with the brokers failed.
    Refused(SecurityError),
    /// The brokers could not say.
    Unknown(String),
}

impl TopicCheck {
    fn result(&self, topic: &str) -> Result<(), PublishError> {
        match self {
            Self::Exists => Ok(()),
            Self::Missing => Err(PublishError::Unroutable {
                destination: topic.to_owned(),
            }),
            Self::Illegal(reason) => Err(PublishError::Invalid {
                reason: reason.clone(),
            }),
            Self::Refused(failure) => Err(PublishError::Unavailable(Box::new(failure.clone()))),
            Self::Unknown(reason) => Err(PublishError::Unavailable(reason.clone().into())),
        }
    }
}

impl Publisher for KafkaPublisher {
    fn messaging_system(&self) -> &'static str {
        "kafka"
    }

    /// Hands every record to librdkafka, which batches them per partition,
    /// then waits for all acknowledgements; one result per envelope.
    async fn send(&self, batch: PublishBatch<'_>) -> Vec<Result<(), PublishError>> {
        let envelopes = batch.envelopes();
        let checked = self.check_topics(envelopes).await;
        let mut pending = Vec::with_capacity(envelopes.len());
        for envelope in envelopes {
            let topic = &envelope.destination;
            pending.push(self.enqueue(envelope, checked[topic].result(topic)).await);
        }
        let acknowledged =
            pending
                .into_iter()
                .zip(envelopes)
                .map(|(queued, envelope)| async move {
                    let outcome = match queued {
                        Ok((delivery, size)) => {
                            self.producer
                                .acknowledged(delivery, &envelope.destination, size)
                                .await
                        }
                        Err(error) => Err(error),
                    };
                    trace_outcome(envelope, outcome)
                });
        join_all(acknowledged).await
    }
}
