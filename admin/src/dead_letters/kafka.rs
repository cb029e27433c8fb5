//! Kafka dead-letter topics: `<topic>.dlt`, filled by the consumer's acker
//! with the reason, the deliveries the record had, and when it was parked.
//!
//! Reading changes nothing on Kafka: a log is not a queue, and a record is
//! not taken to be read. The reader joins no consumer group and commits no
//! offset; it reads every partition from its low watermark to the high
//! watermark it found at the start. So no delivery count grows and no
//! retention clock restarts however often a dead letter is looked at.
//!
//! A log cannot delete one record either. A replay or a delete therefore
//! appends a small *marker* record to the dead-letter topic, naming the
//! record it resolves (`x-tidings-resolved: <partition>/<offset>`) and how
//! (`x-tidings-resolution: replayed` or `deleted`), and every read leaves
//! resolved records and the markers themselves out. A replay publishes the
//! copy to the original topic and waits for the brokers to acknowledge it
//! before it writes the marker: a replay that dies between the two leaves
//! the dead letter unresolved, and running it again sends a second copy,
//! which the consumer's inbox handles once (the event id is kept). The
//! records themselves go when the topic's retention removes them.

use std::sync::Arc;
use std::time::Duration;

use tidings_kafka::rdkafka::ClientConfig;
use tidings_kafka::rdkafka::consumer::BaseConsumer;
use tidings_kafka::rdkafka::message::{Header, OwnedHeaders};
use tidings_kafka::rdkafka::producer::{FutureProducer, FutureRecord};
use tidings_kafka::{ClientOptions, dead_letter_topic, validate_topic};
use tokio::sync::Mutex;

use super::kafka_log::{
    Parked, RESOLUTION_HEADER, RESOLVED_HEADER, broker, partitions, read_topic, unresolved,
};
use super::scan::{Action, DeadLetterQueues, Scan, ScanRequest};
use super::{DeadLetter, QueueDepth};
use crate::AdminError;

/// How long reading a dead-letter topic, or the brokers' acknowledgement
/// of one record, may take.
const TIMEOUT: Duration = Duration::from_secs(30);

/// The dead-letter topics of a Kafka cluster (or a Kafka-protocol broker).
///
/// ```no_run
/// # async fn demo() -> Result<(), tidings_admin::AdminError> {
/// use tidings_admin::dead_letters::{
///     DeadLetterFilter, DeadLetterQueues, KafkaDeadLetters, ReplayOptions,
/// };
/// use tidings_admin::tidings_kafka::ClientOptions;
///
/// let dead = KafkaDeadLetters::new(&ClientOptions::new("127.0.0.1:9092"))?;
/// let report = dead.replay("orders", &DeadLetterFilter::default(), ReplayOptions::new()).await?;
/// println!("replayed {} of {}", report.done, report.matched);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct KafkaDeadLetters {
    config: ClientConfig,
    producer: FutureProducer,
    /// The turn scans take (see [`Scan::scan_alone`]).
    turns: Arc<Mutex<()>>,
}

impl std::fmt::Debug for KafkaDeadLetters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaDeadLetters").finish_non_exhaustive()
    }
}

impl KafkaDeadLetters {
    /// The dead-letter topics on the brokers of `client`. Connects when
    /// first used.
    ///
    /// # Errors
    ///
    /// [`AdminError::Invalid`] when librdkafka refuses the configuration.
    pub fn new(client: &ClientOptions) -> Result<Self, AdminError> {
        let config = client.client_config();
        // Replayed copies and markers: written once each, in order,
        // acknowledged by every in-sync replica.
        let producer = config
            .clone()
            .set("enable.idempotence", "true")
            .set("acks", "all")
            .set("allow.auto.create.topics", "false")
            .create()
            .map_err(|e| AdminError::Invalid(format!("invalid kafka client settings: {e}")))?;
        Ok(Self {
            config,
            producer,
            turns: Arc::default(),
        })
    }

    /// The unresolved records of the dead-letter topic of `queue`.
    async fn read(&self, queue: &str) -> Result<Vec<Parked>, AdminError> {
        validate_topic(queue).map_err(AdminError::Invalid)?;
        let (config, topic) = (self.config.clone(), dead_letter_topic(queue));
        let records = blocking(move || read_topic(config, &topic, TIMEOUT, DLT_HINT)).await?;
        Ok(unresolved(records))
    }

    /// Fails unless `topic` exists.
    async fn check_topic(&self, topic: &str, hint: &'static str) -> Result<(), AdminError> {
        let (config, topic) = (self.config.clone(), topic.to_owned());
        blocking(move || {
            let consumer: BaseConsumer = config.create().map_err(broker)?;
            partitions(&consumer, &topic, TIMEOUT, hint).map(drop)
        })
        .await
    }

    /// Publishes a copy of `record` to `queue` and waits for the brokers'
    /// acknowledgement.
    async fn send_copy(&self, queue: &str, record: &Parked) -> Result<(), AdminError> {
        let mut copy = FutureRecord::to(queue)
            .payload(record.payload.as_slice())
            .headers(record.replay_headers());
        if let Some(key) = &record.key {
            copy = copy.key(key.as_slice());
        }
        self.send(copy).await
    }

    /// Appends the marker that resolves `record` to its partition of the
    /// dead-letter topic of `queue`. The payload repeats the position, so
    /// the marker is never an empty record.
    async fn mark(&self, queue: &str, record: &Parked, resolution: &str) -> Result<(), AdminError> {
        let topic = dead_letter_topic(queue);
        let position = record.position();
        let headers = OwnedHeaders::new()
            .insert(Header {
                key: RESOLVED_HEADER,
                value: Some(position.as_bytes()),
            })
            .insert(Header {
                key: RESOLUTION_HEADER,
                value: Some(resolution.as_bytes()),
            });
        let marker = FutureRecord::to(&topic)
            .partition(record.partition)
            .payload(position.as_bytes())
            .headers(headers);
        self.send(marker).await
    }

    /// Sends `record` and waits for the brokers' acknowledgement.
    async fn send(&self, record: FutureRecord<'_, [u8], [u8]>) -> Result<(), AdminError> {
        self.producer
            .send(record, TIMEOUT)
            .await
            .map(drop)
            .map_err(|(error, _)| broker(error))
    }
}

const DLT_HINT: &str = "its topic was never created with Topology::create (which adds the .dlt topic), or the name is misspelt";
const TARGET_HINT: &str = "create it again (Topology::create) before replaying into it";

/// Runs a blocking librdkafka call off the async runtime.
async fn blocking<T: Send + 'static>(
    call: impl FnOnce() -> Result<T, AdminError> + Send + 'static,
) -> Result<T, AdminError> {
    tokio::task::spawn_blocking(call)
        .await
        .map_err(|e| AdminError::Broker(Box::new(e)))?
}

impl DeadLetterQueues for KafkaDeadLetters {
    /// The dead letters not yet replayed or deleted; counting them reads
    /// the topic.
    async fn depth(&self, queue: &str) -> Result<QueueDepth, AdminError> {
        let records = self.read(queue).await?;
        Ok(QueueDepth {
            queue: dead_letter_topic(queue),
            messages: records.len() as u64,
        })
    }
}

impl Scan for KafkaDeadLetters {
    fn dead_letter_queue(&self, queue: &str) -> String {
        dead_letter_topic(queue)
    }

    fn turns(&self) -> &Mutex<()> {
        &self.turns
    }

    async fn scan(&self, request: ScanRequest<'_>) -> Result<(Vec<DeadLetter>, usize), AdminError> {
        let (queue, filter, action, options) = request.parts();
        let records = self.read(queue).await?;
        let acting = action != Action::Peek && !options.dry_run;
        if acting && action == Action::Replay {
            self.check_topic(queue, TARGET_HINT).await?;
        }
        let mut letters = Vec::new();
        let mut done = 0;
        for record in records {
            if letters.len() >= filter.limit {
                break;
            }
            let letter = record.letter();
            if !filter.matches(&letter) {
                continue;
            }
            if acting {
                if let Some(pause) = options.pause().filter(|_| done > 0) {
                    tokio::time::sleep(pause).await;
                }
                let resolution = match action {
                    Action::Replay => {
                        self.send_copy(queue, &record).await?;
                        "replayed"
                    }
                    _ => "deleted",
                };
                self.mark(queue, &record, resolution).await?;
                done += 1;
            }
            letters.push(letter);
        }
        Ok((letters, done))
    }
}
