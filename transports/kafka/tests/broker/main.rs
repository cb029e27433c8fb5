//! Kafka as a broker: the conformance suites of `tidings-testing`,
//! publishing, settling, TLS and SASL, and the whole path from a
//! PostgreSQL outbox to consumers with the PostgreSQL inbox, through
//! rebalances and a broker restart. Every test has topics and consumer
//! groups of its own; the restart test kills a private broker, so the
//! tests beside it on the shared one are not disturbed. The crash test is
//! its own harness and the trace test installs a global `tracing`
//! subscriber: both are binaries of their own.
//!
//! - `conformance`: the broker and foreign-producer suites.
//! - `consumer`: the consumer suite, with the PostgreSQL inbox.
//! - `publish`: record layout, per-key partitions, failures told apart.
//! - `settle`: delayed retries, new members, commits, parked records.
//! - `tls`: TLS, client certificates, SASL, and every refusal.
//! - `rebalance`: two consumers of one group rebalancing.
//! - `restart`: the relay and the consumer across a broker restart.

#[path = "../support/mod.rs"]
mod support;

mod conformance;
mod consumer;
mod publish;
mod rebalance;
mod restart;
mod settle;
mod tls;
