//! The consumer runner on a real RabbitMQ queue with the PostgreSQL inbox:
//! the consumer suite of `tidings-testing` and what only RabbitMQ shows,
//! batches, a handler's database errors, and headers from staging to the
//! handler. Each test has queues, tables and connection names of its own.
//! The tests that kill consumer processes and the trace test, which
//! installs a global `tracing` subscriber, are binaries of their own
//! (`postgres_rabbitmq_crash/`, `postgres_rabbitmq_replicas.rs`,
//! `postgres_rabbitmq_trace.rs`).
//!
//! - `suite`: the consumer suite on classic and quorum queues.
//! - `batch`: batches (`ConsumerOptions::max_batch`).
//! - `correlation`: what a handler stages arrives caused by its message.
//! - `errors`: how a handler's database errors are read.
//! - `header_property`: any staged header is refused or arrives intact.
//! - `headers`: headers refused at staging, and none parking its event.
//! - `stored`: the stored inbox, through a handler outage and a kill.
//! - `tailed`: the stored inbox on a table read by log tailing.
//! - `typed`: per-type handlers, each at its own isolation level.

#[path = "../support/mod.rs"]
mod support;

mod batch;
mod correlation;
mod errors;
mod header_property;
mod headers;
mod stored;
mod suite;
mod tailed;
mod typed;
