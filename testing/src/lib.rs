//! Test support for tidings: conformance suites written once and run by
//! every store and transport, unique names for test isolation, and the
//! addresses of the real services tests talk to.
//!
//! A backend runs a suite by implementing its harness and invoking the
//! suite's macro in an integration test:
//!
//! ```no_run
//! use tidings_core::StagedEvent;
//! use tidings_core::memory::MemoryStore;
//! use tidings_testing::store::StoreHarness;
//!
//! struct Memory;
//!
//! impl StoreHarness for Memory {
//!     type Store = MemoryStore;
//!
//!     async fn store(&self) -> MemoryStore {
//!         MemoryStore::new()
//!     }
//!
//!     async fn commit(&self, store: &MemoryStore, events: Vec<StagedEvent>) {
//!         let mut ctx = store.begin();
//!         for event in events {
//!             ctx.outbox().push(event);
//!         }
//!         ctx.commit().unwrap();
//!     }
//! }
//!
//! // In an integration test file:
//! tidings_testing::store_conformance!(Memory);
//! # fn main() {}
//! ```

pub mod broker;
pub mod faults;
pub mod inbox;
pub mod names;
#[cfg(feature = "otel")]
pub mod otel;
pub mod services;
pub mod store;
