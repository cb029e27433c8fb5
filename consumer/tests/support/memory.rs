//! What the in-memory consumer tests share: a broker and store, orders,
//! and an effect counter written through the handler's transaction.
#![allow(dead_code)]

use std::time::Duration;

use tidings_consumer::{Consumer, ConsumerOptions, ConsumerReport, Handler, Inbox};
use tidings_core::memory::{MemoryBroker, MemoryContext, MemoryStore};
use tidings_core::{Backoff, Codec, Envelope, InboxAttempts, QueueSpec, Source};
use tokio_util::sync::CancellationToken;

pub(crate) static ORDERS: QueueSpec<Order> = QueueSpec::json("orders");

pub(crate) use tidings_testing::consumer::Order;
#[allow(unused_imports)] // each binary uses some
pub(crate) use tidings_testing::consumer::memory_effects::{add_effect, count_effect, effects};
use tidings_testing::consumer::{order_to, run_for};

pub(crate) const QUICK: Backoff = Backoff::new(Duration::from_millis(5), Duration::from_millis(20));

pub(crate) fn options() -> ConsumerOptions {
    ConsumerOptions::default()
        .retry_backoff(QUICK)
        .restart_backoff(QUICK)
        .shutdown_timeout(Duration::from_secs(5))
}

/// Order `id` as an envelope for the `orders` queue, keyed by `key`.
pub(crate) fn order(id: u32, key: Option<&str>) -> Envelope {
    order_to("orders", id, key)
}

pub(crate) fn setup() -> (MemoryStore, MemoryBroker) {
    let broker = MemoryBroker::new();
    broker.declare_queue("orders");
    (MemoryStore::new(), broker)
}

/// A consumer running on a task of its own.
pub(crate) struct RunningConsumer {
    cancel: CancellationToken,
    task: tokio::task::JoinHandle<ConsumerReport>,
}

impl RunningConsumer {
    /// Runs `consumer` until [`stop`](Self::stop).
    pub(crate) fn start<S, C, H, I>(consumer: Consumer<S, Order, C, H, I>) -> Self
    where
        S: Source + 'static,
        C: Codec<Order> + Send + Sync + 'static,
        I: InboxAttempts,
        H: Handler<Order, I::Tx> + 'static,
    {
        let cancel = CancellationToken::new();
        let task = tokio::spawn({
            let cancel = cancel.clone();
            async move {
                consumer.run(cancel).await;
                consumer.report()
            }
        });
        Self { cancel, task }
    }

    /// Stops the consumer as a shutdown would; its report.
    pub(crate) async fn stop(self) -> ConsumerReport {
        self.cancel.cancel();
        self.task.await.unwrap()
    }
}

/// Runs the consumer until `done` holds for its report, for at most 10 s.
pub(crate) async fn run_until<H>(
    consumer: Consumer<MemoryBroker, Order, tidings_core::JsonCodec, H, MemoryStore>,
    done: impl Fn(&ConsumerReport) -> bool,
) -> ConsumerReport
where
    H: tidings_consumer::Handler<Order, MemoryContext>,
{
    let done = |report: ConsumerReport| std::future::ready(done(&report));
    run_for(consumer, Duration::from_secs(10), done).await
}

/// Runs consumers of `handler` with the `billing` inbox one after another,
/// stopping each as a crash would (`options` with a zero
/// `shutdown_timeout` abandon its handlers mid-run) `grace` after `reached`
/// fires, until a run goes 2 s without it; returns the number of crashes
/// and the last run's report.
pub(crate) async fn crash_each_time_reached<H>(
    (store, broker): (&MemoryStore, &MemoryBroker),
    handler: &H,
    options: ConsumerOptions,
    reached: &mut tokio::sync::mpsc::UnboundedReceiver<()>,
    grace: Duration,
    most: u32,
) -> (u32, ConsumerReport)
where
    H: tidings_consumer::Handler<Order, MemoryContext>,
{
    let mut crashes = 0;
    loop {
        let consumer = Consumer::new(broker.clone(), &ORDERS, handler.clone())
            .unwrap()
            .inbox(Inbox::new(store.clone(), "billing").unwrap())
            .options(options);
        let run = RunningConsumer::start(consumer);
        let crashed = tokio::select! {
            _ = reached.recv() => true,
            () = tokio::time::sleep(Duration::from_secs(2)) => false,
        };
        tokio::time::sleep(grace).await;

        let report = run.stop().await;
        if !crashed {
            return (crashes, report);
        }
        crashes += 1;
        assert!(crashes <= most, "still crashing after {most} runs");
    }
}
