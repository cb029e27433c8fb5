//! The broker conformance suite: what every publisher and source must
//! honour.

mod harness;

pub use harness::{BrokerFixture, BrokerHarness};
