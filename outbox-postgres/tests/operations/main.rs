//! The store where it is deployed: behind a transaction pooler, over TLS,
//! through a server restart, and relaying for several tenants. The
//! restart and TLS tests run on private throwaway clusters, so the tests
//! beside them on the shared server are not disturbed.
//!
//! - `pooler`: staging, relays, wake-ups and the inbox behind PgBouncer.
//! - `restart`: the listener across a database restart.
//! - `tenants`: a shared relay over the stores of several tenants.
//! - `tls`: the store over TLS with `sslmode=verify-full`.

#[path = "../support/mod.rs"]
mod support;

mod pooler;
mod restart;
mod tenants;
mod tls;
