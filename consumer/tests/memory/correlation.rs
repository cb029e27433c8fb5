//! Automatic correlation on the in-memory store and broker: what a handler
//! stages carries the handled message's correlation id and names it as
//! its cause, one delivery at a time and in batches, unless the handler
//! sets its own; and so it arrives at the next consumer.

use crate::support;

use std::collections::HashMap;

use support::ids::{Ids, SeenIds, recording_ids};
use support::memory::*;
use tidings_consumer::{Consumer, TxHandle, handler_fn};
use tidings_core::memory::{MemoryBroker, MemoryContext, MemoryStore};
use tidings_core::relay::Relay;
use tidings_core::{Envelope, Message, OutboxSpec, PublisherExt, QueueSpec};
use tidings_inbox::Inbox;

static BILLED: OutboxSpec<Order> = OutboxSpec::json("billing-events").destination("billing");
static BILLING: QueueSpec<Order> = QueueSpec::json("billing");

/// Orders `0..20`: the even ones in the flow `flow-{id}`, the odd ones
/// without a correlation id.
fn orders() -> Vec<Envelope> {
    (0..20)
        .map(|id| {
            let mut envelope = order(id, None);
            if id % 2 == 0 {
                envelope.correlation_id = Some(format!("flow-{id}"));
            }
            envelope
        })
        .collect()
}

/// What order `order` should cause: order 5 sets its own ids.
fn expected(order: u32, envelope: &Envelope) -> Ids {
    let id = envelope.event_id.to_string();
    match envelope.correlation_id.clone() {
        _ if order == 5 => (Some("own".into()), Some("manual".into())),
        Some(flow) => (Some(flow), Some(id)),
        None => (Some(id.clone()), Some(id)),
    }
}

/// Consumes the orders with `max_batch`, staging an `order.billed` for
/// each; relays those to `billing` and consumes them there; the ids each
/// arrived with, by order.
async fn billed_ids(sent: &[Envelope], max_batch: usize) -> (HashMap<u32, Ids>, u64) {
    let (store, broker) = setup();
    broker.declare_queue("billing");
    for envelope in sent {
        broker.publish(envelope).await.unwrap();
    }
    let bill = handler_fn(
        |msg: Message<Order>, tx: TxHandle<MemoryContext>| async move {
            let mut ctx = tx.lock().await;
            let staged = ctx.outbox().stage(&BILLED, "order.billed", &msg.payload)?;
            if msg.payload.id == 5 {
                staged.correlation_id("own").causation_id("manual");
            }
            Ok(())
        },
    );
    let consumer = Consumer::new(broker.clone(), &ORDERS, bill)
        .unwrap()
        .inbox(Inbox::new(store.clone(), "billing").unwrap())
        .options(options().concurrency(1).max_batch(max_batch));
    let report = run_until(consumer, |r| r.processed == 20).await;
    Relay::new(store.clone(), broker.clone(), &BILLED)
        .unwrap()
        .drain()
        .await
        .unwrap();
    (received(&store, &broker).await, report.batched)
}

/// The ids of every `order.billed` consumed from `billing`, by order.
async fn received(store: &MemoryStore, broker: &MemoryBroker) -> HashMap<u32, Ids> {
    let seen = SeenIds::default();
    let consumer = Consumer::new(broker.clone(), &BILLING, recording_ids(&seen))
        .unwrap()
        .inbox(Inbox::new(store.clone(), "audit").unwrap())
        .options(options());
    run_until(consumer, |r| r.processed == 20).await;
    seen.lock().unwrap().clone()
}

#[tokio::test]
async fn events_staged_by_a_handler_carry_its_message_as_their_cause() {
    for max_batch in [1, 8] {
        let sent = orders();
        let (ids, batched) = billed_ids(&sent, max_batch).await;
        let want: HashMap<u32, Ids> = sent
            .iter()
            .enumerate()
            .map(|(id, e)| (id as u32, expected(id as u32, e)))
            .collect();
        assert_eq!(ids, want, "max_batch {max_batch}");
        if max_batch > 1 {
            assert!(batched > 0, "no delivery shared a transaction");
        }
    }
}
