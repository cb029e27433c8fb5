//! Test support for tidings: conformance suites written once and run by
//! every store and transport, unique names for test isolation, and the
//! addresses of the real services tests talk to.
//!
//! A backend runs a suite by implementing its harness and invoking the
//! suite's macro in an integration test:
//!
//! ```ignore
//! struct Pg;
//! impl tidings_testing::store::StoreHarness for Pg { /* .. */ }
//! tidings_testing::store_conformance!(Pg);
//! ```

pub mod broker;
pub mod faults;
pub mod names;
pub mod services;
pub mod store;
