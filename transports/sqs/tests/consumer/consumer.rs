//! The consumer runner on SQS: parking by `max_deliveries`, and handlers
//! that run longer than the visibility timeout.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::time::Duration;

use crate::support::orders::{Order, count_effect, effects, options, order, run_until, spec};
use crate::support::{client, declare, publish_all, queue_name, source_options, standard_queue};
use tidings_consumer::{Consumer, HandlerError, TxHandle, handler_fn};
use tidings_core::memory::{MemoryContext, MemoryStore};
use tidings_core::{DEAD_LETTER_REASON_HEADER, Message, PublisherExt};
use tidings_inbox::Inbox;
use tidings_sqs::{PublisherOptions, QueueOptions, SqsPublisher, SqsSource};
use tidings_testing::broker::{next, subscribe};
use tidings_testing::consumer::counted;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_deliveries_parks_on_its_own_without_a_redrive_policy() {
    let client = client().await;
    let queue = queue_name("parking", false);
    let parked = queue_name("parked", false);
    declare(
        &client,
        &queue,
        QueueOptions::default().without_dead_letter_queue(),
    )
    .await;
    declare(
        &client,
        &parked,
        QueueOptions::default().without_dead_letter_queue(),
    )
    .await;
    let publisher = SqsPublisher::new(client.clone(), PublisherOptions::default());
    publisher
        .publish(&order(&queue, 666))
        .await
        .expect("publish");
    publisher.publish(&order(&queue, 1)).await.expect("publish");

    let calls = Arc::new(AtomicU32::new(0));
    let handler = handler_fn({
        let calls = calls.clone();
        move |msg: Message<Order>, _tx: TxHandle<MemoryContext>| {
            let calls = calls.clone();
            async move {
                if msg.payload.id != 666 {
                    return Ok(());
                }
                calls.fetch_add(1, SeqCst);
                Err(HandlerError::transient("always fails"))
            }
        }
    });
    let source_options = source_options().dead_letter_queue(&queue, &parked);
    let source = SqsSource::new(client.clone(), source_options);
    let consumer = Consumer::new(source.clone(), spec(&queue), handler)
        .unwrap()
        .inbox(Inbox::new(MemoryStore::new(), "billing").unwrap())
        .options(options().attempts(1).max_deliveries(3));

    let report = run_until(consumer, Duration::from_secs(30), |r| {
        r.parked == 1 && r.processed == 1
    })
    .await;
    assert_eq!((report.processed, report.parked, report.failed), (1, 1, 3));
    assert_eq!(
        calls.load(SeqCst),
        3,
        "handler ran on deliveries 1 to 3 only"
    );

    let mut dead = subscribe(&source, &parked).await;
    let delivery = next(&mut dead).await;
    let reason = &delivery.envelope().headers[DEAD_LETTER_REASON_HEADER];
    assert!(reason.contains("max_deliveries 3"), "{reason}");
    delivery.ack().await.expect("ack");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_max_deliveries_the_redrive_policy_parks_what_keeps_failing() {
    let (client, queue, publisher) =
        standard_queue("redriven", QueueOptions::default().max_receive_count(2)).await;
    let poison = order(&queue, 666);
    publisher.publish(&poison).await.expect("publish");

    let calls = Arc::new(AtomicU32::new(0));
    let handler = counted(&calls, |_, _, _: TxHandle<MemoryContext>| async {
        Err(HandlerError::transient("always fails"))
    });
    let source = SqsSource::new(client, source_options());
    let consumer = Consumer::new(source.clone(), spec(&queue), handler)
        .unwrap()
        .inbox(Inbox::new(MemoryStore::new(), "billing").unwrap())
        .options(options().attempts(1));

    let report = run_until(consumer, Duration::from_secs(8), |_| false).await;
    assert_eq!((report.failed, report.parked), (2, 0), "{report:?}");
    assert_eq!(
        calls.load(SeqCst),
        2,
        "SQS stops delivering after two receives"
    );
    let mut dead = subscribe(&source, &tidings_sqs::dead_letter_queue(&queue)).await;
    let delivery = next(&mut dead).await;
    assert_eq!(delivery.envelope().event_id, poison.event_id);
    delivery.ack().await.expect("ack");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_running_past_the_visibility_timeout_is_not_redelivered_meanwhile() {
    let visibility = Duration::from_secs(2);
    let (client, queue, publisher) = standard_queue(
        "slowhandler",
        QueueOptions::default().visibility_timeout(visibility),
    )
    .await;
    publisher.publish(&order(&queue, 7)).await.expect("publish");

    let calls = Arc::new(AtomicU32::new(0));
    let handler = counted(&calls, move |_, _, _: TxHandle<MemoryContext>| async move {
        tokio::time::sleep(visibility * 3).await;
        Ok(())
    });
    let source: SqsSource = SqsSource::new(client, source_options());
    let store = MemoryStore::new();
    let consumer = Consumer::new(source, spec(&queue), handler)
        .unwrap()
        .inbox(Inbox::new(store, "billing").unwrap())
        .options(options().concurrency(4));

    let report = run_until(consumer, Duration::from_secs(30), |r| r.processed == 1).await;
    assert_eq!(report.processed, 1, "{report:?}");
    assert_eq!(
        report.duplicates, 0,
        "redelivered while the handler ran: {report:?}"
    );
    assert_eq!(calls.load(SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn effects_apply_once_across_a_queue_of_orders() {
    let (client, queue, publisher) = standard_queue("orders", QueueOptions::default()).await;
    let batch: Vec<_> = (0..30).map(|id| order(&queue, id)).collect();
    publish_all(&publisher, &batch).await;
    // The same events again, as a relay retrying after a lost answer would.
    publish_all(&publisher, &batch[..10]).await;

    let store = MemoryStore::new();
    let handler = handler_fn(
        |msg: Message<Order>, tx: TxHandle<MemoryContext>| async move {
            count_effect(&msg, &tx).await;
            Ok(())
        },
    );
    let source = SqsSource::new(client, source_options());
    let consumer = Consumer::new(source, spec(&queue), handler)
        .unwrap()
        .inbox(Inbox::new(store.clone(), "billing").unwrap())
        .options(options());

    let report = run_until(consumer, Duration::from_secs(30), |r| {
        r.processed + r.duplicates == 40
    })
    .await;
    assert_eq!((report.processed, report.duplicates), (30, 10));
    let effects = effects(&store);
    assert_eq!(effects.len(), 30);
    assert!(effects.values().all(|n| *n == 1), "{effects:?}");
}
