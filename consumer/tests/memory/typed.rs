//! Per-type handlers: one queue, several event types, each decoded into
//! its own payload and run through its own handler with its own settings;
//! unknown types parked or skipped.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::time::Duration;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tidings_consumer::{
    Consumer, ConsumerReport, EventHandlers, HandlerError, Inbox, TxHandle, TypeOptions,
    UnknownType, handler_fn,
};
use tidings_core::lifecycle::Step;
use tidings_core::memory::{MemoryBroker, MemoryContext, MemoryStore};
use tidings_core::{Envelope, IsolationLevel, Message, PublisherExt};
use tidings_testing::consumer::run_for;
use tokio_util::sync::CancellationToken;

use crate::support::memory::{options, setup};

#[derive(Serialize, Deserialize)]
struct Placed {
    order: u32,
}

#[derive(Serialize, Deserialize)]
struct Cancelled {
    order: u32,
    reason: String,
}

async fn place(msg: Message<Placed>, tx: TxHandle<MemoryContext>) -> Result<(), HandlerError> {
    let order = msg.payload.order.to_string();
    tx.lock().await.insert("placed", order, "placed");
    Ok(())
}

async fn cancel(msg: Message<Cancelled>, tx: TxHandle<MemoryContext>) -> Result<(), HandlerError> {
    let Cancelled { order, reason } = msg.payload;
    tx.lock()
        .await
        .insert("cancelled", order.to_string(), reason);
    Ok(())
}

fn event(event_type: &str, payload: &impl Serialize) -> Envelope {
    let payload = Bytes::from(serde_json::to_vec(payload).unwrap());
    Envelope::new(
        "order-events",
        "orders",
        event_type,
        payload,
        "application/json",
    )
}

fn orders() -> EventHandlers<MemoryContext> {
    EventHandlers::new()
        .on("order.placed", handler_fn(place))
        .on("order.cancelled", handler_fn(cancel))
}

/// Publishes `events`, then runs a consumer of `handlers` until `done`.
async fn consume(
    (store, broker): (&MemoryStore, &MemoryBroker),
    handlers: EventHandlers<MemoryContext>,
    events: &[Envelope],
    done: impl Fn(&ConsumerReport) -> bool,
) -> ConsumerReport {
    for envelope in events {
        broker.publish(envelope).await.unwrap();
    }
    let consumer = Consumer::for_types(broker.clone(), "orders", handlers)
        .unwrap()
        .inbox(Inbox::new(store.clone(), "orders").unwrap())
        .options(options().max_deliveries(2));
    let done = |report: ConsumerReport| std::future::ready(done(&report));
    run_for(consumer, Duration::from_secs(10), done).await
}

#[tokio::test]
async fn each_type_runs_its_own_handler_and_the_rest_are_parked() {
    let (store, broker) = setup();
    let events = [
        event("order.placed", &Placed { order: 1 }),
        event(
            "order.cancelled",
            &Cancelled {
                order: 2,
                reason: "late".into(),
            },
        ),
        event("order.shipped", &Placed { order: 3 }),
        // A placed order that does not decode as one.
        event("order.placed", &"not an order"),
    ];
    let done = |r: &ConsumerReport| r.processed + r.parked == 4;
    let report = consume((&store, &broker), orders(), &events, done).await;

    assert_eq!(
        (report.processed, report.parked, report.unknown),
        (2, 2, 1),
        "{report:?}"
    );
    assert_eq!(store.table("placed").len(), 1);
    assert_eq!(store.get("cancelled", "2"), Some(Bytes::from("late")));
    assert_eq!(
        broker.depth("orders.dlq"),
        2,
        "the unknown and the undecodable one"
    );
}

#[tokio::test]
async fn unknown_types_are_acked_unhandled_when_skipped() {
    let (store, broker) = setup();
    let events = [
        event("order.shipped", &Placed { order: 3 }),
        event("order.placed", &Placed { order: 1 }),
    ];
    let handlers = orders().unknown(UnknownType::Skip);
    let done = |r: &ConsumerReport| r.processed == 1 && r.unknown == 1;
    let report = consume((&store, &broker), handlers, &events, done).await;

    assert_eq!(
        (report.processed, report.parked, report.unknown),
        (1, 0, 1),
        "{report:?}"
    );
    assert_eq!(broker.depth("orders"), 0);
    assert_eq!(broker.depth("orders.dlq"), 0);
}

/// A handler that sleeps `pause` and counts its starts and completions.
fn sleeper(
    pause: Duration,
    table: &'static str,
) -> (
    impl tidings_consumer::Handler<Placed, MemoryContext>,
    Arc<AtomicU32>,
) {
    let starts = Arc::new(AtomicU32::new(0));
    let handler = handler_fn({
        let starts = starts.clone();
        move |msg: Message<Placed>, tx: TxHandle<MemoryContext>| {
            starts.fetch_add(1, Relaxed);
            async move {
                tokio::time::sleep(pause).await;
                tx.lock()
                    .await
                    .insert(table, msg.payload.order.to_string(), "done");
                Ok(())
            }
        }
    });
    (handler, starts)
}

#[tokio::test]
async fn each_type_has_its_own_timeout_and_attempts() {
    let (store, broker) = setup();
    let pause = Duration::from_millis(150);
    let (hasty, hasty_starts) = sleeper(pause, "hasty");
    let (patient, _) = sleeper(pause, "patient");
    // The consumer gives every handler 5 attempts of 30 s; the hasty type
    // one of 20 ms, so its message is parked after its two deliveries.
    let hasty_options = TypeOptions::default()
        .handler_timeout(Duration::from_millis(20))
        .attempts(1);
    let handlers = EventHandlers::new()
        .on_with("hasty", tidings_core::JsonCodec, hasty, hasty_options)
        .on("patient", patient);
    let events = [
        event("hasty", &Placed { order: 1 }),
        event("patient", &Placed { order: 2 }),
    ];
    for envelope in &events {
        broker.publish(envelope).await.unwrap();
    }
    let consumer = Consumer::for_types(broker.clone(), "orders", handlers)
        .unwrap()
        .inbox(Inbox::new(store.clone(), "orders").unwrap())
        .options(options().attempts(5).max_deliveries(2));
    let done = |r: ConsumerReport| std::future::ready(r.processed == 1 && r.parked == 1);
    let report = run_for(consumer, Duration::from_secs(10), done).await;

    assert_eq!((report.processed, report.parked), (1, 1), "{report:?}");
    assert_eq!(
        store.table("patient").len(),
        1,
        "the patient type ran to its end"
    );
    assert!(
        store.table("hasty").is_empty(),
        "the hasty type was cut short"
    );
    let starts = hasty_starts.load(Relaxed);
    assert!(
        (2..=3).contains(&starts),
        "one attempt per delivery, not five: {starts}"
    );
}

#[tokio::test]
async fn a_level_the_store_does_not_offer_stops_the_consumer() {
    let (store, broker) = setup();
    broker
        .publish(&event("order.placed", &Placed { order: 1 }))
        .await
        .unwrap();
    let serializable = TypeOptions::default().isolation(IsolationLevel::Serializable);
    let handlers = EventHandlers::new().on_with(
        "order.placed",
        tidings_core::JsonCodec,
        handler_fn(place),
        serializable,
    );
    let consumer = Consumer::for_types(broker.clone(), "orders", handlers)
        .unwrap()
        .inbox(Inbox::new(store.clone(), "orders").unwrap());

    let refused = Step::run(&consumer, CancellationToken::new()).await;
    let refusal = refused.expect_err("the in-memory store offers read committed only");
    assert!(refusal.to_string().contains("serializable"), "{refusal}");
    let returned = tokio::time::timeout(
        Duration::from_secs(2),
        consumer.run(CancellationToken::new()),
    );
    returned.await.expect("run returns at once");
    assert_eq!(broker.depth("orders"), 1, "nothing consumed");
}
