//! The consumer runner on the in-memory store and broker: the consumer
//! suite of `tidings-testing`, and what only this backend shows (attempts
//! per delivery, the dead-letter queue's depth, timeouts).

use crate::support;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use support::memory::*;
use tidings_consumer::{Consumer, HandlerError, StoredInbox, TxHandle, handler_fn};
use tidings_core::memory::{MemoryBroker, MemoryContext, MemoryStore};
use tidings_core::{Envelope, Message, PublisherExt, QueueSpec};
use tidings_inbox::Inbox;
use tidings_testing::consumer::{self as suite, ConsumerWorld, Effects, counted};

#[tokio::test]
async fn poison_runs_its_attempts_on_each_delivery_then_lands_in_the_dead_letter_queue() {
    let (store, broker) = setup();
    broker.publish(&order(666, None)).await.unwrap();
    let mut garbage = order(0, None);
    garbage.payload = Bytes::from_static(b"{not json");
    broker.publish(&garbage).await.unwrap();
    for id in 1..=5 {
        broker.publish(&order(id, None)).await.unwrap();
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    let handler = handler_fn({
        let seen = seen.clone();
        move |msg: Message<Order>, tx: TxHandle<MemoryContext>| {
            let seen = seen.clone();
            async move {
                seen.lock().unwrap().push(msg.payload.id);
                if msg.payload.id == 666 {
                    return Err(HandlerError::transient("always fails"));
                }
                count_effect(&msg, &tx).await;
                Ok(())
            }
        }
    });
    let inbox = Inbox::new(store.clone(), "billing").unwrap();
    let options = options().attempts(2).max_deliveries(3).concurrency(1);
    let consumer = Consumer::new(broker.clone(), &ORDERS, handler)
        .unwrap()
        .inbox(inbox)
        .options(options);

    let report = run_until(consumer, |r| r.parked == 2 && r.processed == 5).await;
    assert_eq!((report.processed, report.parked), (5, 2));
    let seen = seen.lock().unwrap();
    assert_eq!(
        seen.iter().filter(|id| **id == 666).count(),
        6,
        "3 deliveries x 2 attempts, then parked"
    );
    assert!(
        !seen.contains(&0),
        "undecodable payload reached the handler"
    );
    assert_eq!(broker.depth("orders.dlq"), 2);
    assert_eq!(effects(&store).len(), 5);
}

#[tokio::test]
async fn a_handler_timeout_is_a_transient_failure() {
    let (store, broker) = setup();
    broker.publish(&order(1, None)).await.unwrap();
    let calls = Arc::new(AtomicU32::new(0));
    let handler = counted(&calls, |n, msg, tx: TxHandle<MemoryContext>| async move {
        count_effect(&msg, &tx).await;
        if n == 0 {
            tokio::time::sleep(Duration::from_secs(60)).await;
        }
        Ok(())
    });
    let inbox = Inbox::new(store.clone(), "billing").unwrap();
    let options = options().handler_timeout(Duration::from_millis(100));
    let consumer = Consumer::new(broker.clone(), &ORDERS, handler)
        .unwrap()
        .inbox(inbox)
        .options(options);

    let report = run_until(consumer, |r| r.processed == 1).await;
    assert_eq!(
        (report.processed, report.failed),
        (1, 0),
        "retried in process after the timeout"
    );
    assert_eq!(calls.load(SeqCst), 2);
    assert_eq!(effects(&store), HashMap::from([(1, 1)]));
}

/// A fresh in-memory store and broker with the queue declared, its
/// consumers keeping what they receive in the store where `stored`.
struct Memory {
    store: MemoryStore,
    broker: MemoryBroker,
    stored: bool,
}

impl Memory {
    async fn new() -> Self {
        let (store, broker) = setup();
        Self {
            store,
            broker,
            stored: false,
        }
    }

    async fn stored() -> Self {
        Self {
            stored: true,
            ..Self::new().await
        }
    }
}

impl ConsumerWorld for Memory {
    type Source = MemoryBroker;
    type Inbox = MemoryStore;
    type Kept = MemoryStore;

    fn kept(&self) -> Option<StoredInbox<MemoryStore>> {
        self.stored
            .then(|| tidings_testing::consumer::quick_stored(self.store.clone()))
    }

    fn source(&self) -> MemoryBroker {
        self.broker.clone()
    }

    fn queue(&self) -> QueueSpec<suite::Order> {
        QueueSpec::json(ORDERS.name())
    }

    fn inbox(&self) -> Inbox<MemoryStore> {
        Inbox::new(self.store.clone(), "billing").unwrap()
    }

    async fn publish(&self, envelope: &Envelope) {
        self.broker.publish(envelope).await.unwrap();
    }

    async fn apply(&self, tx: &TxHandle<MemoryContext>, id: u32) -> Result<(), HandlerError> {
        add_effect(tx, id).await;
        Ok(())
    }

    async fn effects(&self) -> Effects {
        let effects = effects(&self.store);
        Effects {
            orders: effects.len() as u64,
            most: effects.values().copied().max().unwrap_or(0).into(),
        }
    }
}

mod conformance {
    use super::Memory;
    tidings_testing::consumer_conformance!(Memory::new(); with_key_order, with_give_up);
}

mod stored_conformance {
    use super::Memory;
    tidings_testing::consumer_conformance!(Memory::stored(); with_key_order, with_give_up);
}
