//! Orders, a consumer driven until a condition holds, and effect counters
//! kept in the in-memory store.

use std::time::Duration;

use tidings_consumer::{Consumer, ConsumerReport};
use tidings_core::memory::{MemoryContext, MemoryStore};
use tidings_core::{Envelope, QueueSpec};
use tidings_sqs::SqsSource;
use tidings_testing::consumer::{order_to, run_for};

#[allow(unused_imports)] // each binary uses some
pub use tidings_testing::consumer::memory_effects::{count_effect, effects};
#[allow(unused_imports)] // each binary uses some
pub use tidings_testing::consumer::{Order, options};

/// Order `id` as an envelope for `queue`.
pub fn order(queue: &str, id: u32) -> Envelope {
    order_to(queue, id, None)
}

/// A queue spec for a queue named at run time.
pub fn spec(queue: &str) -> &'static QueueSpec<Order> {
    let name: &'static str = Box::leak(queue.to_owned().into_boxed_str());
    Box::leak(Box::new(QueueSpec::json(name)))
}

/// Runs `consumer` until `done` holds for its report, for at most `limit`.
pub async fn run_until<H>(
    consumer: Consumer<SqsSource, Order, tidings_core::JsonCodec, H, MemoryStore>,
    limit: Duration,
    done: impl Fn(&ConsumerReport) -> bool,
) -> ConsumerReport
where
    H: tidings_consumer::Handler<Order, MemoryContext>,
{
    let done = |report: ConsumerReport| std::future::ready(done(&report));
    run_for(consumer, limit, done).await
}
