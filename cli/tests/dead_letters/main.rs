//! Dead letters through `tidings dead-letters`, on each broker: a poison
//! message parked by a consumer is looked at without changing, replayed
//! once its handler is fixed and handled exactly once, and replays that
//! cannot go through keep it. The Kafka and SQS modules need the `kafka`
//! and `sqs` features.
//!
//! - `rabbitmq`: queues, delivery limits and dropped connections.
//! - `kafka`: dead-letter topics, and deletes.
//! - `sqs`: dead-letter queues, and their redrive policies.

#[path = "../support/mod.rs"]
mod support;

#[cfg(feature = "kafka")]
mod kafka;
mod rabbitmq;
#[cfg(feature = "sqs")]
mod sqs;
