//! The conformance suites of `tidings-testing` on PostgreSQL: the store
//! suite in each retention and claim mode and on a rotated outbox, the
//! inbox suite, and both again behind PgBouncer in transaction mode.
//!
//! - `store`: the store suite on the server directly.
//! - `inbox`: the inbox suite on the server directly.
//! - `pooler`: the store and inbox suites behind the pooler.

#[path = "../support/mod.rs"]
mod support;

mod inbox;
mod pooler;
mod store;
