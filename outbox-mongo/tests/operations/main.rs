//! The store where it is deployed: the change-stream wake-up, on the
//! shared server and on private servers the tests break, and TLS.
//!
//! - `wakeup`: a commit wakes the relay; broken and missing streams.
//! - `tls`: the store over TLS, and an unknown CA refused.

#[path = "../support/mod.rs"]
mod support;

mod tls;
mod wakeup;
