#![doc = include_str!("../README.md")]

mod ack_window;
mod acker;
mod confirms;
mod connection;
mod count;
mod error;
mod exchanges;
mod handshake;
mod inequivalent;
mod lanes;
mod names;
mod options;
mod outgoing;
mod pending_acks;
mod properties;
mod publisher;
mod queue;
mod shared;
mod source;
mod tls;
mod tls_error;
mod topology;
mod verify;

pub use acker::RabbitAcker;
pub use error::TopologyError;
pub use options::{
    ConnectionOptions, DestinationOptions, PublisherOptions, RoutingKey, SourceOptions,
    StreamOffset,
};
pub use properties::{DEAD_LETTER_REASON_HEADER, PRIOR_DELIVERIES_HEADER};
pub use publisher::RabbitPublisher;
pub use shared::RabbitConnection;
pub use source::{RabbitSource, RabbitStream};
pub use tls::{Pem, TlsOptions};
pub use tls_error::TlsError;

/// The lapin this crate is built on.
pub use lapin;
pub use names::{dead_letter_exchange, dead_letter_queue, delay_queue, exchange_name};
pub use queue::{DeadLetterOptions, Overflow, QueueKind, QueueOptions, QueueOptionsError};
pub use topology::{Topology, TopologyMode};
