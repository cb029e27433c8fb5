//! The MongoDB scenarios (built with the `mongo` feature): staging,
//! draining and commit-to-publish latency on the `tidings-mongo` store,
//! against the same work done with the raw driver on the same server in
//! the same run. The server is read from `MONGODB_URL`.
//!
//! Where the server is a stand-in for `mongod` rather than MongoDB itself,
//! its absolute rates and delays say nothing about MongoDB's; the ratios
//! against the raw driver on the same server do.

mod documents;
pub(super) mod drain_noop;
pub(super) mod latency;
mod services;
pub(super) mod stage;
mod staging;
