//! The inbox conformance suite: what every inbox store must honour.
//!
//! Each case is a function taking the store's [`InboxHarness`];
//! [`inbox_conformance!`](crate::inbox_conformance) turns every case into a
//! test.

mod attempts;
mod harness;
mod isolation;
mod marks;

pub use attempts::*;
pub use harness::{InboxHarness, REACTIONS};
pub use isolation::*;
pub use marks::*;

use std::sync::LazyLock;

use tidings_core::ConsumerName;

use crate::names::consumer_name;

/// The consumer the cases mark and count for.
static BILLING: LazyLock<ConsumerName> = LazyLock::new(|| consumer_name("billing"));
/// Another consumer, whose marks and counts must stay apart.
static SHIPPING: LazyLock<ConsumerName> = LazyLock::new(|| consumer_name("shipping"));

/// Expands to one `#[tokio::test]` per case of the inbox conformance
/// suite, each calling the case with the harness expression, then its
/// `teardown`.
#[macro_export]
macro_rules! inbox_conformance {
    ($harness:expr) => {
        $crate::conformance_cases!([inbox], $crate::inbox::InboxHarness::teardown, $harness;
            a_duplicate_is_reported_and_leaves_the_transaction_usable,
            a_rollback_takes_the_mark_with_it,
            concurrent_marks_of_one_event_commit_once,
            a_concurrent_mark_commits_when_the_first_rolls_back,
            old_marks_are_purged_per_consumer_in_batches,
            hostile_consumer_names_are_refused,
            attempts_count_starts_and_ends,
            attempts_are_counted_per_consumer_and_event,
            a_commit_clears_attempts_and_a_rollback_keeps_them,
            a_start_outlives_a_transaction_that_never_ends,
            retention_purges_stale_attempt_counts,
            each_offered_isolation_level_opens_a_transaction,
        );
    };
}
