//! The conformance suites of `tidings-testing` on MongoDB: the store suite
//! with each retention, the inbox suite, and the consumer suite with the
//! MongoDB inbox on a real RabbitMQ queue. Every case runs on collections
//! of its own.
//!
//! - `store`: the store suite, with each retention.
//! - `inbox`: the inbox suite.
//! - `consumer`: the consumer suite, the broker closing the connection.

#[path = "../support/mod.rs"]
mod support;

mod consumer;
mod inbox;
mod store;
