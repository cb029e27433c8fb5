//! The in-memory backend: an outbox and inbox store with a unit of work that
//! commits atomically, and a broker with named queues, exact delivery counts
//! and dead-letter queues.
//!
//! It honours every contract the real backends do (it runs the same
//! conformance suites), so services can test their handlers and relays
//! without a database or broker.
//!
//! ```
//! use tidings_core::memory::MemoryStore;
//! use tidings_core::OutboxSpec;
//!
//! static EVENTS: OutboxSpec<u64> = OutboxSpec::json("order-events").destination("orders");
//!
//! # tokio_test_block_on(async {
//! let store = MemoryStore::new();
//! let mut ctx = store.begin();
//! ctx.insert("orders", "42", "placed");
//! ctx.outbox().stage(&EVENTS, "order.placed", &42)?;
//! ctx.commit()?;
//! assert_eq!(store.pending_count("order-events"), 1);
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! # fn tokio_test_block_on<F: std::future::Future>(f: F) -> F::Output {
//! #     tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
//! # }
//! ```

mod acker;
mod batch;
mod broker;
mod claim;
mod context;
mod inbox;
mod options;
mod outbox;
mod rows;
mod store;

pub use crate::Retention;
pub use acker::{MemoryAcker, MemoryStream};
pub use batch::MemoryBatch;
pub use broker::{DEAD_LETTER_SUFFIX, MEMORY_SYSTEM, MemoryBroker, MemoryBrokerOptions};
pub use context::{CommitError, MemoryContext};
pub use options::MemoryStoreOptions;
pub use store::MemoryStore;
