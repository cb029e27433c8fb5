//! The give-up hook on what only per-type handlers park: a message of a
//! type no handler is for. The suite's give-up cases cover the rest.

use std::time::Duration;

use bytes::Bytes;
use tidings_consumer::{Consumer, EventHandlers, HandlerError, Inbox, TxHandle, handler_fn};
use tidings_core::give_up::{GivenUp, give_up_fn};
use tidings_core::memory::MemoryContext;
use tidings_core::{BoxError, Envelope, Message, PublisherExt};
use tidings_testing::consumer::run_for;

use crate::support::memory::{options, setup};

async fn place(_msg: Message<u32>, _tx: TxHandle<MemoryContext>) -> Result<(), HandlerError> {
    Ok(())
}

async fn note(given_up: GivenUp, tx: TxHandle<MemoryContext>) -> Result<(), BoxError> {
    let id = given_up.envelope.event_id.to_string();
    tx.lock().await.insert("given_up", id, given_up.reason);
    Ok(())
}

#[tokio::test]
async fn a_message_of_an_unknown_type_runs_the_give_up_hook_when_parked() {
    let (store, broker) = setup();
    let refunded = Envelope::new(
        "order-events",
        "orders",
        "order.refunded",
        Bytes::from_static(b"7"),
        "application/json",
    );
    broker.publish(&refunded).await.unwrap();
    let handlers = EventHandlers::new().on("order.placed", handler_fn(place));
    let consumer = Consumer::for_types(broker.clone(), "orders", handlers)
        .unwrap()
        .inbox(Inbox::new(store.clone(), "orders").unwrap())
        .options(options())
        .give_up(give_up_fn(note));
    let done = |report: tidings_consumer::ConsumerReport| std::future::ready(report.parked == 1);
    let report = run_for(consumer, Duration::from_secs(10), done).await;
    assert_eq!(report.parked, 1);
    let noted = store.table("given_up");
    assert_eq!(noted.len(), 1, "the hook ran other than once");
    assert_eq!(noted[0].0, refunded.event_id.to_string());
}
