//! The consumer runner on the in-memory store and broker: shutdown and
//! restart, a lost source, causal order of reactions.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::time::Duration;

use support::memory::*;
use tidings_consumer::{Consumer, TxHandle, handler_fn};
use tidings_core::memory::{MemoryBroker, MemoryContext};
use tidings_core::{Message, PublisherExt};
use tidings_inbox::Inbox;
use tidings_testing::consumer::run_for;

#[tokio::test]
async fn shutdown_under_load_then_restart_applies_every_message_once() {
    let (store, broker) = setup();
    for id in 0..200 {
        broker.publish(&order(id, None)).await.unwrap();
    }
    let slow = handler_fn(
        |msg: Message<Order>, tx: TxHandle<MemoryContext>| async move {
            tokio::time::sleep(Duration::from_millis(3)).await;
            count_effect(&msg, &tx).await;
            Ok(())
        },
    );
    let inbox = Inbox::new(store.clone(), "billing").unwrap();
    let first = Consumer::new(broker.clone(), &ORDERS, slow)
        .unwrap()
        .inbox(inbox.clone())
        .options(options());
    // Stopped 60 ms in, whatever it is doing then.
    let stop_after = Duration::from_millis(60);
    let partial = run_for(first, stop_after, |_| async { false })
        .await
        .processed;
    assert!(
        partial > 0 && partial < 200,
        "shutdown should land mid-load, processed {partial}"
    );
    assert_eq!(
        broker.unacked("orders"),
        0,
        "deliveries left unacked after shutdown"
    );
    assert_eq!(
        effects(&store).len() as u64,
        partial,
        "an effect committed without its ack, or the reverse"
    );

    let second = Consumer::new(broker.clone(), &ORDERS, slow)
        .unwrap()
        .inbox(inbox)
        .options(options());
    let report = run_until(second, |r| r.processed + r.duplicates + partial >= 200).await;
    assert_eq!(report.processed + partial, 200);
    let effects = effects(&store);
    assert_eq!(effects.len(), 200);
    assert!(
        effects.values().all(|n| *n == 1),
        "an order had its effect twice"
    );
}

/// A source whose streams fail after a few deliveries, as a dropped broker
/// connection would; unsettled deliveries go back to the queue.
#[derive(Clone)]
struct Flaky {
    broker: MemoryBroker,
    cut_after: usize,
    subscriptions: Arc<AtomicU32>,
}

impl tidings_core::Source for Flaky {
    type Acker = tidings_core::memory::MemoryAcker;
    type Stream = futures::stream::BoxStream<
        'static,
        Result<
            tidings_core::Delivery<tidings_core::memory::MemoryAcker>,
            tidings_core::SourceError,
        >,
    >;

    async fn subscribe(&self, queue: &str) -> Result<Self::Stream, tidings_core::SourceError> {
        use futures::StreamExt;
        self.subscriptions.fetch_add(1, SeqCst);
        let lost = futures::stream::once(async {
            Err(tidings_core::SourceError::Unavailable(
                "connection reset by peer".into(),
            ))
        });
        Ok(self
            .broker
            .subscribe(queue)
            .await?
            .take(self.cut_after)
            .chain(lost)
            .boxed())
    }
}

#[tokio::test]
async fn a_lost_source_is_resubscribed_and_nothing_is_lost_or_doubled() {
    let (store, broker) = setup();
    for id in 0..50 {
        broker.publish(&order(id, None)).await.unwrap();
    }
    let flaky = Flaky {
        broker: broker.clone(),
        cut_after: 7,
        subscriptions: Arc::default(),
    };
    let handler = handler_fn(
        |msg: Message<Order>, tx: TxHandle<MemoryContext>| async move {
            count_effect(&msg, &tx).await;
            Ok(())
        },
    );
    let inbox = Inbox::new(store.clone(), "billing").unwrap();
    let consumer = Consumer::new(flaky.clone(), &ORDERS, handler)
        .unwrap()
        .inbox(inbox)
        .options(options());
    let running = RunningConsumer::start(consumer);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while effects(&store).len() < 50 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let report = running.stop().await;
    assert!(
        flaky.subscriptions.load(SeqCst) >= 7,
        "the consumer did not resubscribe"
    );
    assert_eq!(report.processed, 50);
    let effects = effects(&store);
    assert_eq!(effects.len(), 50);
    assert!(effects.values().all(|n| *n == 1));
}

#[tokio::test]
async fn reactions_sort_after_their_cause_with_a_shared_hybrid_clock() {
    static REACTIONS: tidings_core::OutboxSpec<u32> = tidings_core::OutboxSpec::json("reactions")
        .destination("invoices")
        .hlc_ordering();
    let (store, broker) = setup();
    let mut cause = order(1, None);
    let ahead = store.hlc().now().physical_ms() + 20_000;
    cause.hlc = Some(tidings_core::Hlc::from_u64(ahead << 16));
    broker.publish(&cause).await.unwrap();
    let handler = handler_fn(
        |msg: Message<Order>, tx: TxHandle<MemoryContext>| async move {
            tx.lock()
                .await
                .outbox()
                .stage(&REACTIONS, "invoice.created", &msg.payload.id)?;
            Ok(())
        },
    );
    let inbox = Inbox::new(store.clone(), "billing").unwrap();
    let consumer = Consumer::new(broker.clone(), &ORDERS, handler)
        .unwrap()
        .inbox(inbox)
        .hybrid_clock(store.hlc().clone())
        .options(options());
    run_until(consumer, |r| r.processed == 1).await;

    let request = tidings_core::ClaimRequest {
        route: REACTIONS.route(),
        limit: 1,
        lease: Duration::from_secs(60),
        after: None,
    };
    let batch = tidings_core::OutboxStore::claim(&store, request)
        .await
        .unwrap();
    let reaction = tidings_core::ClaimedBatch::records(&batch)[0]
        .envelope
        .hlc
        .unwrap();
    assert!(
        reaction > cause.hlc.unwrap(),
        "the reaction {reaction} does not sort after its cause"
    );
}
