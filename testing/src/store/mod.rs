//! The outbox store conformance suite: the state machine every store must
//! honour.
//!
//! Each case is a function taking the store's [`StoreHarness`];
//! [`store_conformance!`](crate::store_conformance) turns every case into a
//! test.

mod claims;
mod expiry;
mod fixtures;
mod give_up;
mod harness;
mod maintenance;
mod marks;
mod ordering;
mod recovery;
mod relays;
mod shared;

pub use claims::*;
pub use expiry::*;
pub use fixtures::{
    LONG_LEASE, SHORT_LEASE, claim, claim_after, claim_leased, claim_within, event, event_ids,
    full_event, keyed, next_claim, numbers, route, settle_all, settle_each, staged, staged_per_key,
    try_claim,
};
pub use give_up::*;
pub use harness::StoreHarness;
pub use maintenance::*;
pub use marks::*;
pub use ordering::*;
pub use recovery::*;
pub use relays::*;
pub use shared::*;

/// Expands to one `#[tokio::test]` per case of the store conformance suite,
/// each calling the case with the harness expression, then its
/// `teardown`.
///
/// `store_conformance!(harness)` runs every case;
/// `store_conformance!(give_up: harness)` the relay's give-up cases, for a
/// harness that is an [`InboxHarness`]. A store whose claims hold
/// their rows by locks in an open transaction rather than by a committed
/// lease, so that a claim that outlived its lease fails to settle rather
/// than being refused row by row, and a sweep cannot take it, runs
/// `store_conformance!(locked: harness)`: every case but those three.
#[macro_export]
macro_rules! store_conformance {
    ($harness:expr) => {
        $crate::store_conformance!(@common $harness;
            stale_lease_marks_are_refused,
            stale_published_marks_are_refused,
            a_swept_relays_late_mark_is_lost_and_the_new_owner_publishes_once,
        );
    };
    (give_up: $harness:expr) => {
        $crate::conformance_cases!([store], $crate::store::StoreHarness::teardown, $harness;
            a_row_failed_for_good_runs_the_relays_give_up_hook_once,
        );
    };
    (locked: $harness:expr) => {
        $crate::store_conformance!(@common $harness;);
    };
    (@common $harness:expr; $($leased:ident),* $(,)?) => {
        $crate::conformance_cases!([store], $crate::store::StoreHarness::teardown, $harness;
            claim_returns_rows_oldest_first_with_every_field,
            claim_respects_limit_and_skips_claimed_rows,
            a_claim_past_a_cursor_leaves_earlier_rows_to_one_without,
            taken_rows_are_the_claimed_ones_and_still_settle,
            routes_are_isolated,
            delayed_rows_wait,
            rows_not_before_a_time_wait,
            hlc_ordering_claims_in_clock_order,
            concurrent_claims_never_overlap,
            published_rows_are_final,
            rescheduled_rows_wait_for_available_at,
            failed_rows_stay_until_requeued,
            delete_failed_takes_only_the_failed_rows_named,
            mixed_outcomes_settle_in_one_call,
            per_key_claims_the_oldest_row_of_each_key,
            per_key_retry_holds_back_only_its_key,
            per_key_failed_row_releases_its_key,
            per_key_concurrent_claimers_keep_key_order,
            sweep_returns_expired_leases_counting_the_crash,
            purge_deletes_finished_rows_in_batches,
            stats_report_depth_age_and_failures,
            a_relay_killed_mid_batch_is_recovered_by_the_next_relay_alone,
            expired_events_are_failed_not_published,
            several_relays_drain_every_event_exactly_once,
            per_key_order_holds_with_several_relays_and_transient_failures,
            a_shared_relay_drains_many_routes_once_keeping_key_order,
            a_shared_relay_serves_tenants_added_and_removed_while_it_runs,
            $($leased),*
        );
    };
}
