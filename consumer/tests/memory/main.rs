//! The consumer runner on the in-memory store and broker: the consumer
//! suite of `tidings-testing` and what only this backend shows, poison
//! parking by handler attempts, batches, strict key order at its edges,
//! specs named at run time, recovery, and the metrics it reports. The
//! metrics test records through a recorder local to its own thread, so
//! the tests beside it leave its figures alone.
//!
//! - `suite`: the consumer suite, attempts, the dead-letter queue, timeouts.
//! - `attempts`: poison parking counts handler attempts, not deliveries.
//! - `batch`: batches sharing a transaction, and their rollback.
//! - `correlation`: what a handler stages is caused by its message.
//! - `give_up`: the give-up hook on a message of an unknown type.
//! - `key_order`: `KeyOrder::Strict` at its edges.
//! - `metrics`: deliveries by outcome and handler times.
//! - `named_specs`: specs named at run time.
//! - `recovery`: shutdown and restart, a lost source, causal order.
//! - `stored`: the stored inbox.
//! - `typed`: per-type handlers.

#[path = "../support/mod.rs"]
mod support;

mod attempts;
mod batch;
mod correlation;
mod give_up;
mod key_order;
mod metrics;
mod named_specs;
mod recovery;
mod stored;
mod suite;
mod typed;
