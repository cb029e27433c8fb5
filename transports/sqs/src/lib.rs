#![doc = include_str!("../README.md")]

mod acker;
mod attributes;
mod batching;
mod body;
mod client;
mod context;
mod dead_letter;
mod deleter;
mod error;
mod group;
mod heartbeat;
mod options;
mod outgoing;
mod publisher;
mod queues;
mod source;
mod topology;

pub use acker::SqsAcker;
pub use attributes::{MAX_MESSAGE_ATTRIBUTES, PACKED_ATTRIBUTE};
pub use body::BODY_ENCODING_ATTRIBUTE;
pub use client::local_client;
pub use dead_letter::{message_headers, replay_attributes};
pub use error::TopologyError;
pub use options::{
    DestinationOptions, MAX_DELAY, MAX_VISIBILITY_TIMEOUT, PublisherOptions, SourceOptions,
};
pub use publisher::SqsPublisher;
pub use queues::is_fifo;
pub use source::{SqsSource, SqsStream};
pub use topology::{
    MAX_QUEUE_NAME_LEN, QueueOptions, Topology, dead_letter_queue, validate_queue_name,
};

/// The SDK this crate is built on, so users name the same `Client`.
pub use aws_sdk_sqs;
