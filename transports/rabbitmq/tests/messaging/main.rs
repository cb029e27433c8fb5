//! Messages on the real broker: the conformance suites of
//! `tidings-testing`, publishing, settling, acks sent together and queue
//! options. Each test has queues and connection names of its own.
//!
//! - `conformance`: the broker suite on classic and quorum queues, and the
//!   foreign-producer suite.
//! - `publish`: per-message failures never fail the rest of a batch.
//! - `settle`: dead-letter reasons, delivery counts, unreadable messages.
//! - `acks`: a run of acks settles as one frame, never a held delivery.
//! - `queues`: queue options, and queues an operator owns.

#[path = "../support/mod.rs"]
mod support;

mod acks;
mod conformance;
mod publish;
mod queues;
mod settle;
