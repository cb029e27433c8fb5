//! Creating a topic with its retry and dead-letter topics.

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication, TopicResult};
use rdkafka::client::DefaultClientContext;
use rdkafka::error::{KafkaResult, RDKafkaErrorCode};

use tidings_core::settings;

use crate::error::{ClientError, ConnectError, Failed, TopologyError, failed_topology};
use crate::names::{dead_letter_topic, retry_topic, validate_with_companions};
use crate::options::{ClientOptions, PublisherOptions};
use crate::producer::Producer;

/// How a topic and its companions are created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicOptions {
    pub(crate) partitions: i32,
    pub(crate) replication_factor: i32,
    pub(crate) max_message_bytes: Option<usize>,
}

impl TopicOptions {
    /// Default [`partitions`](Self::partitions): 4.
    pub const DEFAULT_PARTITIONS: i32 = 4;
    /// Default [`replication_factor`](Self::replication_factor): 1; use 3
    /// on a production cluster.
    pub const DEFAULT_REPLICATION_FACTOR: i32 = 1;
}

settings!(TopicOptions {
    /// The number of partitions of the topic and of its retry and
    /// dead-letter topics (at least 1); the consumers of one group share
    /// them. Default [`DEFAULT_PARTITIONS`](Self::DEFAULT_PARTITIONS).
    partitions(partitions: i32) = partitions.max(1), get_partitions: i32;
    /// How many brokers keep a copy of each partition (at least 1); default
    /// [`DEFAULT_REPLICATION_FACTOR`](Self::DEFAULT_REPLICATION_FACTOR).
    replication_factor(factor: i32) = factor.max(1), get_replication_factor: i32;
    /// The topics' `max.message.bytes`; the broker's default when unset.
    max_message_bytes(bytes: usize) = Some(bytes), get_max_message_bytes: Option<usize>;
});

impl Default for TopicOptions {
    fn default() -> Self {
        Self {
            partitions: Self::DEFAULT_PARTITIONS,
            replication_factor: Self::DEFAULT_REPLICATION_FACTOR,
            max_message_bytes: None,
        }
    }
}

/// Creates and deletes topics: each topic comes with its retry topic
/// (`<topic>.retry`) and dead-letter topic (`<topic>.dlt`), with the same
/// partition count, so a record keeps its key's partition order in each.
///
/// ```no_run
/// use tidings_kafka::{ClientOptions, TopicOptions, Topology};
///
/// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
/// let topology = Topology::new(&ClientOptions::new("127.0.0.1:9092"))?;
/// topology.create("orders", &TopicOptions::default().partitions(8)).await?;
/// # Ok(())
/// # }
/// ```
pub struct Topology {
    admin: AdminClient<DefaultClientContext>,
    /// A client beside the administration one, whose log librdkafka
    /// delivers (it does not deliver the administration client's): it
    /// connects to the same brokers with the same settings, so it meets
    /// the same TLS and SASL failures.
    watcher: Producer,
    options: AdminOptions,
}

impl std::fmt::Debug for Topology {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Topology").finish_non_exhaustive()
    }
}

impl Topology {
    /// An administration client for the brokers of `client`.
    ///
    /// # Errors
    ///
    /// librdkafka refused the configuration.
    pub fn new(client: &ClientOptions) -> Result<Self, ClientError> {
        let admin = client.config(&[]).create().map_err(ClientError::Config)?;
        let watcher = Producer::new(client, &PublisherOptions::default())?;
        let options = AdminOptions::new()
            .request_timeout(Some(client.request_timeout))
            .operation_timeout(Some(client.request_timeout));
        Ok(Self {
            admin,
            watcher,
            options,
        })
    }

    /// Asks the brokers for their metadata once, so a service fails at
    /// startup rather than later.
    ///
    /// # Errors
    ///
    /// [`ConnectError::Security`] at once when TLS or SASL fails, its
    /// message naming the setting to fix; [`ConnectError::Unreachable`]
    /// when no broker answers within the request timeout.
    pub async fn connect(&self) -> Result<(), ConnectError> {
        self.watcher.connect().await
    }

    /// Creates `topic`, its retry topic and its dead-letter topic; topics
    /// that exist already are left as they are.
    ///
    /// # Errors
    ///
    /// A name that is not legal, unreachable brokers, a TLS or SASL
    /// failure ([`TopologyError::Security`]), or a broker refusing a topic.
    pub async fn create(&self, topic: &str, options: &TopicOptions) -> Result<(), TopologyError> {
        validate_with_companions(topic).map_err(TopologyError::Name)?;
        let names = [
            topic.to_owned(),
            retry_topic(topic),
            dead_letter_topic(topic),
        ];
        let limit = options.max_message_bytes.map(|b| b.to_string());
        let new: Vec<NewTopic<'_>> = names
            .iter()
            .map(|name| {
                let replication = TopicReplication::Fixed(options.replication_factor);
                let new = NewTopic::new(name, options.partitions, replication);
                match &limit {
                    Some(limit) => new.set("max.message.bytes", limit),
                    None => new,
                }
            })
            .collect();
        let created = self.admin.create_topics(&new, &self.options);
        self.settle(
            created,
            "create topic",
            topic,
            RDKafkaErrorCode::TopicAlreadyExists,
        )
        .await?;
        tracing::info!(
            messaging.destination.name = topic,
            partitions = options.partitions,
            "topics created"
        );
        Ok(())
    }

    /// Deletes `topic`, its retry topic and its dead-letter topic; missing
    /// ones are skipped.
    ///
    /// # Errors
    ///
    /// A name that is not legal, unreachable brokers, or a broker refusing
    /// the deletion.
    pub async fn delete(&self, topic: &str) -> Result<(), TopologyError> {
        validate_with_companions(topic).map_err(TopologyError::Name)?;
        let names = [
            topic.to_owned(),
            retry_topic(topic),
            dead_letter_topic(topic),
        ];
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let deleted = self.admin.delete_topics(&refs, &self.options);
        self.settle(
            deleted,
            "delete topic",
            topic,
            RDKafkaErrorCode::UnknownTopicOrPartition,
        )
        .await
    }

    /// Waits for an admin call on `topic` and its companions, given up
    /// when the connection is lost; a topic answered with `done` (already
    /// there, already gone) counts as done.
    async fn settle(
        &self,
        call: impl Future<Output = KafkaResult<Vec<TopicResult>>>,
        action: &'static str,
        topic: &str,
        done: RDKafkaErrorCode,
    ) -> Result<(), TopologyError> {
        let call = async { call.await.map_err(Failed::Kafka) };
        let results = self
            .watcher
            .watch()
            .race(call)
            .await
            .map_err(|failed| failed_topology(failed, action, topic))?;
        for result in results {
            match result {
                Ok(_) => {}
                Err((_, code)) if code == done => {}
                Err((name, code)) => {
                    return Err(TopologyError::Broker {
                        action,
                        topic: name,
                        reason: code.to_string(),
                    });
                }
            }
        }
        Ok(())
    }
}
