//! SQS as a broker: the conformance suites of `tidings-testing`,
//! publishing, settling, queues made from specs, and HTTPS. Every test has
//! queues of its own on the shared SQS stand-in.
//!
//! - `conformance`: the broker suite on standard and FIFO queues, and the
//!   foreign-producer suite.
//! - `publish`: batch limits, oversized messages, FIFO order and
//!   deduplication, delays and payload encodings.
//! - `settle`: the redrive policy, the visibility heartbeat, unreadable
//!   messages.
//! - `topology`: creating and deleting queues from specs.
//! - `tls`: HTTPS with a private CA, and an unknown CA refused.

#[path = "../support/mod.rs"]
mod support;

mod conformance;
mod publish;
mod settle;
mod tls;
mod topology;
