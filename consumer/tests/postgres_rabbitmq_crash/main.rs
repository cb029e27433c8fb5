//! Consumers killed as the kernel's out-of-memory killer would (SIGKILL,
//! by PID), on a real path: PostgreSQL outbox → relay → RabbitMQ quorum
//! queue → consumer children with the PostgreSQL inbox.
//!
//! - `direct`: a message whose handler kills its consumer is parked alone,
//!   every other message has its effect once.
//! - `stored`: a consumer with the stored inbox, killed between storing a
//!   batch and acking it, or mid-handler, loses, doubles and parks nothing.
//!
//! The binary is its own harness (`harness = false`): run plainly it is
//! the parent and runs the tests side by side; with `TIDINGS_CRASH_CHILD`
//! set it is a consumer child, its config `<test> <schema> <queue>`.

#[path = "../support/mod.rs"]
mod support;

mod direct;
mod stored;

use std::time::Duration;

use futures::FutureExt;
use sqlx::AssertSqlSafe;
use support::postgres_rabbitmq::Order;
use support::staging::{relay_every, stage_orders};
use tidings_core::{OutboxSpec, Source};
use tidings_postgres::PgOutboxStore;
use tidings_rabbitmq::{ConnectionOptions, RabbitSource, SourceOptions, dead_letter_queue};
use tidings_testing::consumer::{Parked, collect_parked};
use tidings_testing::faults::harnessless;
use tidings_testing::services::amqp_url;

/// Set in a child's environment to `<test> <schema> <queue>`.
const CHILD_ENV: &str = "TIDINGS_CRASH_CHILD";
/// How long a child runs on once it said where it is, before its kill.
const KILL_AFTER: Duration = Duration::from_millis(150);

fn main() {
    harnessless::run_each(
        CHILD_ENV,
        |config| async move { child(&config).await },
        &[
            ("a_message_that_kills_its_consumer_is_parked_alone", || {
                direct::a_message_that_kills_its_consumer_is_parked_alone().boxed()
            }),
            (
                "a_stored_consumer_killed_before_its_acks_loses_nothing",
                || stored::killed_before_its_acks().boxed(),
            ),
            ("a_stored_consumer_killed_mid_handler_loses_nothing", || {
                stored::killed_mid_handler().boxed()
            }),
        ],
    );
}

/// A child: the consumer of the test its config names.
async fn child(config: &str) {
    let (test, rest) = config.split_once(' ').expect("<test> <schema> <queue>");
    match test {
        direct::CHILD => direct::child(rest).await,
        _ => stored::child(test, rest).await,
    }
}

/// Stages `count` orders over `keys` ordering keys through the outbox and
/// relays them all to `queue`.
async fn stage_and_relay(store: &PgOutboxStore, queue: &'static str, count: u32, keys: u32) {
    let spec: &'static OutboxSpec<Order> = Box::leak(Box::new(
        OutboxSpec::json("order-events").destination(queue),
    ));
    stage_orders(store, spec, count, keys).await;
    relay_every(store.clone(), spec, count, Duration::from_secs(60)).await;
}

/// Collects what lands in the dead-letter queue: `(order id, reason)`.
async fn parked_in(queue: &str) -> Parked {
    let source = RabbitSource::new(ConnectionOptions::new(amqp_url()), SourceOptions::default());
    collect_parked(source.subscribe(&dead_letter_queue(queue)).await.unwrap())
}

/// `(orders with an effect, the most effects one order had, whether order
/// `order` had one)`.
async fn effects(store: &PgOutboxStore, order: u32) -> (i64, i32, bool) {
    let schema = store.options().get_schema();
    let sql = format!(
        "select count(*), coalesce(max(times), 0), coalesce(bool_or(order_id = {order}), false) \
         from \"{schema}\".effects"
    );
    sqlx::query_as(AssertSqlSafe(sql))
        .fetch_one(store.pool())
        .await
        .unwrap()
}
