//! Poison parking counts handler attempts, not broker deliveries: on the
//! in-memory store and broker.

use crate::support;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::SeqCst};
use std::time::Duration;

use support::memory::*;
use tidings_consumer::{Consumer, ConsumerOptions, HandlerError, TxHandle, handler_fn};
use tidings_core::memory::{MemoryBroker, MemoryContext, MemoryStore};
use tidings_core::{DEAD_LETTER_REASON_HEADER, Message, PublisherExt, Source};
use tidings_inbox::Inbox;
use tidings_testing::broker::{next, next_within};
use tokio::sync::mpsc;

/// Takes `times` deliveries of the queue's head and drops them unsettled, as
/// a consumer process that died with them prefetched would: the broker
/// counts each.
async fn lose_deliveries(broker: &MemoryBroker, times: u32) {
    for _ in 0..times {
        let mut stream = broker.subscribe("orders").await.unwrap();
        drop(next(&mut stream).await);
    }
}

/// The dead-lettered deliveries: `(order id, reason)`.
async fn parked(broker: &MemoryBroker) -> Vec<(u32, String)> {
    let mut stream = broker.subscribe("orders.dlq").await.unwrap();
    let mut parked = Vec::new();
    while let Some(delivery) = next_within(&mut stream, Duration::from_millis(100)).await {
        let order: Order = serde_json::from_slice(&delivery.envelope().payload).unwrap();
        let reason = delivery.envelope().headers[DEAD_LETTER_REASON_HEADER].clone();
        parked.push((order.id, reason));
        delivery.ack().await.unwrap();
    }
    parked
}

fn counting_consumer(
    store: &MemoryStore,
    broker: &MemoryBroker,
    options: ConsumerOptions,
) -> Consumer<
    MemoryBroker,
    Order,
    tidings_core::JsonCodec,
    impl tidings_consumer::Handler<Order, MemoryContext>,
    MemoryStore,
> {
    let handler = handler_fn(
        |msg: Message<Order>, tx: TxHandle<MemoryContext>| async move {
            count_effect(&msg, &tx).await;
            Ok::<_, HandlerError>(())
        },
    );
    Consumer::new(broker.clone(), &ORDERS, handler)
        .unwrap()
        .inbox(Inbox::new(store.clone(), "billing").unwrap())
        .options(options)
}

#[tokio::test]
async fn deliveries_that_never_reached_a_handler_do_not_count() {
    let (store, broker) = setup();
    broker.publish(&order(1, None)).await.unwrap();
    lose_deliveries(&broker, 7).await;

    let consumer = counting_consumer(&store, &broker, options().max_deliveries(3));
    let report = run_until(consumer, |r| r.processed == 1).await;
    assert_eq!((report.processed, report.parked), (1, 0));
    assert_eq!(effects(&store), HashMap::from([(1, 1)]));
}

#[tokio::test]
async fn the_broker_count_is_a_backstop_far_above_max_deliveries() {
    let (store, broker) = setup();
    broker.publish(&order(1, None)).await.unwrap();
    let backstop = ConsumerOptions::BROKER_COUNT_BACKSTOP;
    lose_deliveries(&broker, 2 * backstop).await;

    let consumer = counting_consumer(&store, &broker, options().max_deliveries(2));
    let report = run_until(consumer, |r| r.parked == 1).await;
    assert_eq!((report.processed, report.parked), (0, 1));
    let parked = parked(&broker).await;
    assert_eq!(parked.len(), 1);
    assert!(
        parked[0]
            .1
            .contains(&format!("more than {backstop} x max_deliveries 2")),
        "{parked:?}"
    );
}

#[tokio::test]
async fn without_an_inbox_the_broker_count_parks() {
    let (_, broker) = setup();
    broker.publish(&order(1, None)).await.unwrap();
    lose_deliveries(&broker, 3).await;
    let calls = Arc::new(AtomicU32::new(0));
    let handler = handler_fn({
        let calls = calls.clone();
        move |_msg: Message<Order>, _tx: TxHandle<()>| {
            calls.fetch_add(1, SeqCst);
            async { Ok::<_, HandlerError>(()) }
        }
    });
    let consumer = Consumer::new(broker.clone(), &ORDERS, handler)
        .unwrap()
        .options(options().max_deliveries(3));
    let running = RunningConsumer::start(consumer);
    let parked = loop {
        let parked = parked(&broker).await;
        if !parked.is_empty() {
            break parked;
        }
    };
    let report = running.stop().await;
    assert_eq!((report.processed, report.parked), (0, 1));
    assert_eq!(calls.load(SeqCst), 0);
    assert!(
        parked[0]
            .1
            .contains("delivered 4 times, more than max_deliveries 3"),
        "{parked:?}"
    );
}

/// A handler that never returns for order 666, standing in for one that
/// kills its process: each run of the consumer is stopped once it reaches
/// that order, its handler abandoned and every delivery it held left
/// unsettled. Orders of the same key queue behind it, delivered and
/// counted by the broker on every run, but never started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_that_kills_its_consumer_is_parked_alone() {
    let (store, broker) = setup();
    for id in 1..=20 {
        let key = if id % 2 == 0 { "even" } else { "odd" };
        broker.publish(&order(id, Some(key))).await.unwrap();
        if id == 4 {
            broker.publish(&order(666, Some("even"))).await.unwrap();
        }
    }
    let (reached, mut poison) = mpsc::unbounded_channel();
    let handler = handler_fn(move |msg: Message<Order>, tx: TxHandle<MemoryContext>| {
        let reached = reached.clone();
        async move {
            if msg.payload.id == 666 {
                let _ = reached.send(());
                std::future::pending::<()>().await;
            }
            count_effect(&msg, &tx).await;
            Ok::<_, HandlerError>(())
        }
    });
    let max = 2;
    let options = options()
        .max_deliveries(max)
        .shutdown_timeout(Duration::ZERO);
    let backend = (&store, &broker);
    let (crashes, report) = crash_each_time_reached(
        backend,
        &handler,
        options,
        &mut poison,
        Duration::ZERO,
        max + 1,
    )
    .await;
    assert_eq!(
        crashes,
        max + 1,
        "a first start plus max_deliveries counted"
    );
    assert_eq!(report.parked, 1);
    let parked = parked(&broker).await;
    assert_eq!(parked.len(), 1, "{parked:?}");
    assert_eq!(parked[0].0, 666);
    assert!(
        parked[0].1.contains("started 2 times") && parked[0].1.contains("2 never returned"),
        "{parked:?}"
    );
    let effects = effects(&store);
    assert_eq!(effects.len(), 20, "every other order was handled");
    assert!(effects.values().all(|n| *n == 1), "{effects:?}");
    assert_eq!(broker.depth("orders"), 0);
}

/// Order 1's handler runs beside order 666's, which never returns, and is
/// caught mid-run by every crash it shares with it: it stands for the
/// innocent neighbour a dying process takes down with the culprit. After
/// its first unfinished attempt it runs alone, commits, and is never
/// parked, however often the poison crashes the consumer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_neighbour_caught_running_by_crashes_runs_alone_and_is_not_parked() {
    let (store, broker) = setup();
    broker.publish(&order(666, Some("poison"))).await.unwrap();
    broker.publish(&order(1, Some("neighbour"))).await.unwrap();
    let poison_running = Arc::new(AtomicBool::new(false));
    let caught = Arc::new(AtomicU32::new(0));
    let (reached, mut poison) = mpsc::unbounded_channel();
    let handler = handler_fn({
        let caught = caught.clone();
        move |msg: Message<Order>, tx: TxHandle<MemoryContext>| {
            let (reached, poison_running, caught) =
                (reached.clone(), poison_running.clone(), caught.clone());
            async move {
                if msg.payload.id == 666 {
                    let _running = Running::set(&poison_running);
                    let _ = reached.send(());
                    std::future::pending::<()>().await;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
                if poison_running.load(SeqCst) {
                    caught.fetch_add(1, SeqCst);
                    std::future::pending::<()>().await;
                }
                count_effect(&msg, &tx).await;
                Ok::<_, HandlerError>(())
            }
        }
    });
    let max = 2;
    let options = options()
        .concurrency(4)
        .max_batch(1)
        .max_deliveries(max)
        .shutdown_timeout(Duration::ZERO);
    let (backend, grace) = ((&store, &broker), Duration::from_millis(100));
    let (crashes, report) =
        crash_each_time_reached(backend, &handler, options, &mut poison, grace, 2 * max + 2).await;

    assert!(
        caught.load(SeqCst) >= 1,
        "the neighbour ran beside the poison"
    );
    let parked = parked(&broker).await;
    let ids: Vec<u32> = parked.iter().map(|(id, _)| *id).collect();
    assert_eq!(ids, [666], "{parked:?}");
    assert_eq!(effects(&store), HashMap::from([(1, 1)]));
    assert_eq!(report.parked, 1, "{crashes} crashes");
    assert_eq!(broker.depth("orders"), 0);
}

/// Sets a flag while a handler runs, and clears it when the handler is
/// dropped mid-run.
struct Running(Arc<AtomicBool>);

impl Running {
    fn set(flag: &Arc<AtomicBool>) -> Self {
        flag.store(true, SeqCst);
        Self(flag.clone())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.0.store(false, SeqCst);
    }
}
