//! The consumer end-to-end suite: what the consumer runner guarantees on
//! every source and inbox store together.
//!
//! A backend implements [`ConsumerWorld`] (and [`ConnectionFaults`] where
//! the test can break its broker connection);
//! [`consumer_conformance!`](crate::consumer_conformance) turns each case
//! into a test that builds a fresh world.

mod delivery;
mod expiry;
mod give_up;
mod key_order;
pub mod memory_effects;
mod order;
mod parked;
mod pg_effects;
#[cfg(feature = "postgres")]
mod pg_world;
mod recovery;
mod world;

pub use delivery::*;
pub use expiry::*;
pub use give_up::*;
pub use key_order::*;
pub use order::*;
pub use parked::{Parked, collect_parked};
pub use pg_effects::PgEffects;
#[cfg(feature = "postgres")]
pub use pg_world::PgWorld;
pub use recovery::*;
pub use world::*;

/// Expands to one `#[tokio::test]` per case, each awaiting the world
/// expression (a future of a [`ConsumerWorld`]), running the case, then
/// the world's teardown.
///
/// `consumer_conformance!(world)` runs the common cases; add
/// `with_connection_faults` (the world implements [`ConnectionFaults`]),
/// `with_key_order` (2,000 keyed events through each `KeyOrder`) and
/// `with_give_up` (the give-up hook) after a semicolon for more;
/// `consumer_conformance!(world; cases: a, b)` runs the named ones.
#[macro_export]
macro_rules! consumer_conformance {
    (@extra $world:expr; with_connection_faults) => {
        $crate::consumer_conformance!($world; cases: a_lost_connection_loses_and_doubles_nothing);
    };
    (@extra $world:expr; with_give_up) => {
        $crate::consumer_conformance!($world; cases:
            parking_runs_the_give_up_hook_once_and_commits_its_writes,
            a_failing_give_up_hook_is_retried_and_the_message_parked_after_it_succeeds,
            a_message_given_up_before_is_parked_without_running_the_hook_again,
            a_redelivery_of_a_message_given_up_on_is_parked_without_its_handler,
        );
    };
    (@extra $world:expr; with_key_order) => {
        $crate::consumer_conformance!($world; cases:
            strict_order_commits_each_key_in_order_one_at_a_time,
            strict_order_commits_each_key_in_order_in_batches,
            serial_order_reorders_only_nacked_events_one_at_a_time,
            serial_order_reorders_only_nacked_events_in_batches,
        );
    };
    ($world:expr; cases: $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let world = ::std::sync::Arc::new($world.await);
                $crate::consumer::$case(&world).await;
                $crate::consumer::ConsumerWorld::teardown(world.as_ref()).await;
            }
        )*
    };
    ($world:expr; $($extra:ident),+ $(,)?) => {
        $crate::consumer_conformance!($world);
        $($crate::consumer_conformance!(@extra $world; $extra);)+
    };
    ($world:expr) => {
        $crate::consumer_conformance!($world; cases:
            a_message_delivered_three_times_has_its_effect_once,
            a_handler_stages_under_its_message_as_cause,
            expired_messages_are_parked_or_skipped_never_handled,
            a_failing_handler_leaves_nothing_and_succeeds_on_redelivery,
            a_permanent_error_parks_at_once_and_leaves_nothing,
            poison_is_parked_and_does_not_block_the_queue,
            per_key_messages_run_one_at_a_time_in_order,
            shutdown_under_load_then_restart_applies_every_message_once,
        );
    };
}
