//! The outbox store conformance suite: the state machine every store must
//! honour.

mod harness;

pub use harness::StoreHarness;
