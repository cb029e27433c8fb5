//! The consumer runner on SQS: parking and long handlers with the
//! in-memory inbox, the consumer suite of `tidings-testing` with the
//! PostgreSQL inbox, and an outage of the endpoint. The outage test
//! freezes a moto server of its own, so the tests beside it on the shared
//! one are not disturbed. The trace test, which installs a global
//! `tracing` subscriber, is a binary of its own (`trace.rs`).
//!
//! - `consumer`: parking by `max_deliveries`, handlers past the
//!   visibility timeout, effects applied once.
//! - `postgres_consumer`: the consumer suite on standard and FIFO queues.
//! - `outage`: the consumer across an endpoint that stops answering.

#[path = "../support/mod.rs"]
mod support;

mod consumer;
mod outage;
mod postgres_consumer;
