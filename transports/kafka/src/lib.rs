#![doc = include_str!("../README.md")]

mod acker;
mod context;
mod diagnose;
mod error;
mod names;
mod offsets;
mod options;
mod poll;
mod producer;
mod publisher;
mod record;
mod security;
mod source;
mod topology;
mod watch;

/// The Kafka client this crate is built on, for its types in your own code.
pub use rdkafka;

pub use acker::KafkaAcker;
pub use error::{ClientError, ConnectError, SecurityError, TopologyError};
pub use names::{DEAD_LETTER_SUFFIX, RETRY_SUFFIX, dead_letter_topic, retry_topic, validate_topic};
pub use options::{ClientOptions, PublisherOptions, SourceOptions};
pub use publisher::KafkaPublisher;
pub use record::{
    DEAD_LETTER_REASON_HEADER, ORIGIN_HEADER, PRIOR_DELIVERIES_HEADER, RETRY_AT_HEADER,
};
pub use security::{KafkaSasl, KafkaTls, SaslMechanism};
pub use source::{KafkaSource, KafkaStream};
pub use topology::{TopicOptions, Topology};
