//! The broker conformance suite: what every publisher and source must
//! honour.
//!
//! Each case is a function taking the transport's [`BrokerHarness`];
//! [`broker_conformance!`](crate::broker_conformance) turns every case into
//! a test.

mod delivery;
mod fixtures;
pub mod foreign;
mod harness;
mod settlement;

pub use delivery::*;
pub use fixtures::{Item, RECEIVE_TIMEOUT, envelope, next, next_within, subscribe};
pub use harness::{BrokerFixture, BrokerHarness};
pub use settlement::*;

/// Expands to one `#[tokio::test]` per case of the broker conformance
/// suite, each calling the case with the harness expression, then its
/// `teardown`.
#[macro_export]
macro_rules! broker_conformance {
    ($harness:expr) => {
        $crate::conformance_cases!([broker], $crate::broker::BrokerHarness::teardown, $harness;
            round_trip_keeps_every_envelope_field,
            batch_publish_delivers_every_message,
            missing_destination_fails_permanently,
            batch_failure_fails_only_its_message,
            ack_is_final,
            nack_redelivers_with_growing_count,
            delayed_nack_waits_before_redelivery,
            dead_letter_lands_in_the_dead_letter_queue,
            unsettled_delivery_is_redelivered,
        );
    };
}
