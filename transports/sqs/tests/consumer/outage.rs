//! The consumer across an outage: its own moto server is frozen with
//! SIGSTOP, then resumed with SIGCONT, by PID.

use std::sync::Arc;
use std::time::Duration;

use crate::support::moto::PrivateMoto;
use crate::support::orders::{Order, count_effect, effects, options, order, spec};
use crate::support::{answers, declare, queue_name, source_options};
use tidings_consumer::{Consumer, TxHandle, handler_fn};
use tidings_core::memory::{MemoryContext, MemoryStore};
use tidings_core::{Envelope, Message, PublisherExt};
use tidings_inbox::Inbox;
use tidings_sqs::{PublisherOptions, QueueOptions, SqsPublisher, SqsSource, local_client};
use tokio::time::{Instant, sleep};
use tokio_util::sync::CancellationToken;

const VISIBILITY: Duration = Duration::from_secs(3);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);
const OUTAGE: Duration = Duration::from_secs(8);

/// Publishes `batch`, retrying what fails, until everything is accepted.
async fn publish_all(publisher: &SqsPublisher, batch: &[Envelope]) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut pending: Vec<Envelope> = batch.to_vec();
    while !pending.is_empty() {
        assert!(Instant::now() < deadline, "could not publish {pending:?}");
        let results = publisher.publish_batch(&pending).await;
        pending = pending
            .into_iter()
            .zip(results)
            .filter(|(_, r)| r.is_err())
            .map(|(e, _)| e)
            .collect();
    }
}

/// Waits until `done` holds, for at most `limit`.
async fn wait_for(limit: Duration, done: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while !done() {
        if Instant::now() > deadline {
            return false;
        }
        sleep(Duration::from_millis(50)).await;
    }
    true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_consumer_survives_the_endpoint_not_answering() {
    let moto = PrivateMoto::start().await;
    let endpoint = moto.endpoint();
    let client = local_client(&endpoint);
    answers(&client, &endpoint).await;
    let queue = queue_name("outage", false);
    declare(
        &client,
        &queue,
        QueueOptions::default().visibility_timeout(VISIBILITY),
    )
    .await;
    let publisher = SqsPublisher::new(
        client.clone(),
        PublisherOptions::default().request_timeout(REQUEST_TIMEOUT),
    );
    let first: Vec<_> = (0..20).map(|id| order(&queue, id)).collect();
    publish_all(&publisher, &first).await;

    let store = MemoryStore::new();
    let handler = handler_fn(
        |msg: Message<Order>, tx: TxHandle<MemoryContext>| async move {
            count_effect(&msg, &tx).await;
            sleep(Duration::from_millis(300)).await;
            Ok(())
        },
    );
    let source = SqsSource::new(client, source_options().request_timeout(REQUEST_TIMEOUT));
    let consumer = Arc::new(
        Consumer::new(source, spec(&queue), handler)
            .unwrap()
            .inbox(Inbox::new(store.clone(), "billing").unwrap())
            .options(options().concurrency(4)),
    );
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (consumer, cancel) = (consumer.clone(), cancel.clone());
        async move { consumer.run(cancel).await }
    });

    let started = wait_for(Duration::from_secs(20), || consumer.report().processed >= 5).await;
    assert!(started, "consumer did not start: {:?}", consumer.report());
    moto.pause();
    sleep(OUTAGE).await;
    let during = consumer.report();
    moto.resume();

    let second: Vec<_> = (20..40).map(|id| order(&queue, id)).collect();
    publish_all(&publisher, &second).await;
    let all_applied = wait_for(Duration::from_secs(60), || effects(&store).len() == 40).await;
    // Let messages whose ack was lost in the outage come back and be
    // skipped by the inbox.
    sleep(VISIBILITY * 2).await;
    cancel.cancel();
    task.await.unwrap();

    let report = consumer.report();
    let effects = effects(&store);
    assert!(
        all_applied,
        "lost messages: {} of 40 applied, {report:?}",
        effects.len()
    );
    assert!(
        effects.values().all(|n| *n == 1),
        "applied twice: {effects:?}"
    );
    assert_eq!(report.processed, 40, "{report:?}");
    assert!(
        during.processed < 20,
        "the outage came too late to matter: {during:?}"
    );
}
