//! Acks sent together on the real broker: a run of acks settles as one
//! frame, and never settles a delivery still being handled.

use crate::support;

use std::time::Duration;

use futures::future::join_all;
use support::{Setup, named, next, raw_get};
use tidings_core::{AckError, PublisherExt, Redelivery, Source};
use tidings_rabbitmq::{PublisherOptions, QueueKind, RabbitSource, SourceOptions};
use tidings_testing::faults::close_rabbitmq_connection;
use tidings_testing::names::unique_name;

/// How long an ack that goes out with a later settlement may take to
/// return: it does not wait for that settlement.
const AT_ONCE: Duration = Duration::from_secs(2);

async fn publish(setup: &Setup, count: u32) {
    let batch: Vec<_> = (1..=count).map(|n| setup.envelope(n)).collect();
    let results = setup.publisher.publish_batch(&batch).await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
}

/// Waits until the queue holds nothing: every delivery was settled and
/// none came back.
async fn assert_drained(queue: &str) {
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        raw_get(queue).await.is_none(),
        "a delivery was left unsettled in {queue}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acks_behind_a_delivery_still_held_leave_it_to_its_own_settlement() {
    for kind in [QueueKind::Classic, QueueKind::Quorum] {
        let setup = Setup::new("acks_behind", kind).await;
        publish(&setup, 5).await;
        let mut stream = setup.subscribe(&setup.queue).await;
        let first = next(&mut stream).await;
        let first_id = first.envelope().event_id;
        for _ in 2..=5 {
            let later = next(&mut stream).await;
            let acked = tokio::time::timeout(AT_ONCE, later.ack()).await;
            acked
                .expect("an ack behind a held delivery returns at once")
                .expect("ack");
        }
        // Had an ack covered the first delivery, this nack would name a
        // tag the broker no longer knows, and the channel would close.
        first.nack(Redelivery::Now).await.expect("nack");

        let again = next(&mut stream).await;
        assert_eq!(
            again.envelope().event_id,
            first_id,
            "only the nacked delivery comes back"
        );
        again.ack().await.expect("ack of the redelivery");
        drop(stream);
        assert_drained(&setup.queue).await;
        setup.delete().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_held_for_long_does_not_stall_the_channel() {
    let setup = Setup::new("acks_slow", QueueKind::Quorum).await;
    publish(&setup, 12).await;
    let source = RabbitSource::new(
        support::connection("source"),
        SourceOptions::default().prefetch(4),
    );
    let mut stream = source.subscribe(&setup.queue).await.expect("subscribe");
    let held = next(&mut stream).await;
    // With a prefetch of 4, the broker sends more only as acks come in:
    // those held back behind the first go out alone once two wait.
    for _ in 2..=12 {
        next(&mut stream).await.ack().await.expect("ack");
    }
    held.ack().await.expect("ack of the held delivery");
    drop(stream);
    assert_drained(&setup.queue).await;
    setup.delete().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_acks_at_once_all_land_and_nothing_comes_back() {
    let setup = Setup::new("acks_together", QueueKind::Quorum).await;
    publish(&setup, 300).await;
    let mut stream = setup.subscribe(&setup.queue).await;
    let mut received = Vec::new();
    for _ in 0..300 {
        received.push(next(&mut stream).await);
        if received.len() == 20 {
            // Out of order, all at once, within the prefetch of 32.
            received.reverse();
            let acks = received.drain(..).map(|d| d.ack());
            assert!(join_all(acks).await.iter().all(Result::is_ok));
        }
    }
    let acks = received.into_iter().map(|d| d.ack());
    assert!(join_all(acks).await.iter().all(Result::is_ok));
    drop(stream);
    assert_drained(&setup.queue).await;
    setup.delete().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acks_waiting_on_a_closed_connection_fail_and_the_broker_redelivers() {
    let name = unique_name("tidings-test-acks");
    let publisher = PublisherOptions::default();
    let setup = Setup::with("acks_closed", QueueKind::Quorum, publisher, named(&name)).await;
    publish(&setup, 3).await;
    let mut stream = setup.subscribe(&setup.queue).await;
    let first = next(&mut stream).await;
    let second = next(&mut stream).await;
    second.ack().await.expect("held back behind the first");
    close_rabbitmq_connection(&name).await;
    let settled = first.ack().await;
    assert!(
        matches!(settled, Err(AckError::Expired | AckError::Unavailable(_))),
        "a delivery of the closed connection settled: {settled:?}"
    );

    // All three come back on the new connection, the second among them:
    // its ack never went out.
    let mut ids = Vec::new();
    for _ in 0..3 {
        let delivery = next(&mut stream).await;
        ids.push(delivery.envelope().payload.clone());
        delivery.ack().await.expect("ack after the reconnect");
    }
    ids.sort();
    let mut sent: Vec<_> = (1..=3).map(|n| setup.envelope(n).payload).collect();
    sent.sort();
    assert_eq!(ids, sent);
    drop(stream);
    assert_drained(&setup.queue).await;
    setup.delete().await;
}
