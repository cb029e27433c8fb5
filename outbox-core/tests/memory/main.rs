//! The in-memory backend: the conformance suites of `tidings-testing` on
//! its broker, store and inbox, its unit of work, and the trace staging
//! captures.
//!
//! - `broker`: the broker suite on the in-memory broker.
//! - `context`: the unit of work, all or nothing.
//! - `inbox`: the inbox suite on the in-memory store.
//! - `store`: the store suite, with each retention.
//! - `staging_otel`: staging captures the current trace (feature `otel`).

mod broker;
mod context;
mod inbox;
#[cfg(feature = "otel")]
mod staging_otel;
mod store;
