//! Settling against SQS: the redrive policy, the visibility heartbeat and
//! unreadable messages.

use crate::support;

use std::time::Duration;

use futures::future::join_all;
use support::{publish_all, queue_url, source_options, standard_queue};
use tidings_core::{DEAD_LETTER_REASON_HEADER, Delivery, PublisherExt, Redelivery};
use tidings_sqs::{QueueOptions, SourceOptions, SqsAcker, SqsSource, SqsStream, dead_letter_queue};
use tidings_testing::broker::{envelope, next, next_within, subscribe};

/// The visibility timeout of the queues whose held deliveries are watched.
const HELD_VISIBILITY: Duration = Duration::from_secs(2);

/// Publishes one message to a new queue with a visibility timeout of
/// [`HELD_VISIBILITY`], receives it on one subscription and opens a
/// second: the first subscription, the held delivery and the second.
async fn hold_one(
    prefix: &str,
    options: SourceOptions,
) -> (SqsStream, Delivery<SqsAcker>, SqsStream) {
    let queue_options = QueueOptions::default().visibility_timeout(HELD_VISIBILITY);
    let (client, queue, publisher) = standard_queue(prefix, queue_options).await;
    publisher
        .publish(&envelope(&queue, 1))
        .await
        .expect("publish");
    let source = SqsSource::new(client, options);
    let mut first = subscribe(&source, &queue).await;
    let held = next(&mut first).await;
    let second = subscribe(&source, &queue).await;
    (first, held, second)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_nacked_past_max_receive_count_lands_in_the_dead_letter_queue() {
    let (client, queue, publisher) =
        standard_queue("redrive", QueueOptions::default().max_receive_count(2)).await;
    let sent = envelope(&queue, 1);
    publisher.publish(&sent).await.expect("publish");

    let source = SqsSource::new(client, source_options());
    let mut stream = subscribe(&source, &queue).await;
    for expected in 1..=2 {
        let delivery = next(&mut stream).await;
        assert_eq!(delivery.delivery_count(), Some(expected));
        delivery.nack(Redelivery::Now).await.expect("nack");
    }
    assert!(
        next_within(&mut stream, Duration::from_secs(3))
            .await
            .is_none(),
        "delivered past maxReceiveCount"
    );

    let mut dead = subscribe(&source, &dead_letter_queue(&queue)).await;
    let parked = next(&mut dead).await;
    assert_eq!(parked.envelope(), &sent);
    parked.ack().await.expect("ack");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_delivery_stays_invisible_past_its_visibility_timeout() {
    let (_first, held, mut second) = hold_one("heartbeat", source_options()).await;
    assert!(
        next_within(&mut second, HELD_VISIBILITY * 3)
            .await
            .is_none(),
        "redelivered while its delivery was held"
    );
    held.ack()
        .await
        .expect("ack after three visibility timeouts");
    assert!(
        next_within(&mut second, HELD_VISIBILITY * 2)
            .await
            .is_none()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_heartbeat_a_held_delivery_comes_back() {
    let (_first, held, mut second) =
        hold_one("noheartbeat", source_options().heartbeat(false)).await;
    let again = next(&mut second).await;
    assert_eq!(again.delivery_count(), Some(2));
    again.ack().await.expect("ack");
    // The first receipt is stale now; whether SQS still takes it or not,
    // the message is gone.
    let _stale = held.ack().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_message_is_dead_lettered_with_its_reason() {
    let (client, queue, publisher) = standard_queue("unreadable", QueueOptions::default()).await;
    let url = queue_url(&client, &queue).await;
    client
        .send_message()
        .queue_url(url)
        .message_body("not an envelope")
        .send()
        .await
        .expect("send raw");
    let good = envelope(&queue, 2);
    publisher.publish(&good).await.expect("publish");

    let source = SqsSource::new(client.clone(), source_options());
    let mut stream = subscribe(&source, &queue).await;
    let delivery = next(&mut stream).await;
    assert_eq!(delivery.envelope().event_id, good.event_id);
    delivery.ack().await.expect("ack");
    assert!(
        next_within(&mut stream, Duration::from_secs(1))
            .await
            .is_none()
    );

    let dlq_url = queue_url(&client, &dead_letter_queue(&queue)).await;
    let parked = client
        .receive_message()
        .queue_url(dlq_url)
        .message_attribute_names("All")
        .wait_time_seconds(5)
        .send()
        .await
        .expect("receive from the dead-letter queue");
    let message = &parked.messages()[0];
    assert_eq!(message.body(), Some("not an envelope"));
    let reason = message.message_attributes().unwrap()[DEAD_LETTER_REASON_HEADER]
        .string_value()
        .unwrap();
    assert!(reason.contains("not a tidings envelope"), "{reason}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acks_sent_together_all_land() {
    let (client, queue, publisher) = standard_queue("acks", QueueOptions::default()).await;
    let batch: Vec<_> = (0..25).map(|n| envelope(&queue, n)).collect();
    publish_all(&publisher, &batch).await;

    let source = SqsSource::new(client, source_options());
    let mut stream = subscribe(&source, &queue).await;
    let mut held = Vec::new();
    for _ in 0..25 {
        held.push(next(&mut stream).await);
    }
    let acks = join_all(held.into_iter().map(|d| d.ack())).await;
    assert!(acks.iter().all(Result::is_ok), "{acks:?}");
    drop(stream);
    let mut again = subscribe(&source, &queue).await;
    assert!(
        next_within(&mut again, support::VISIBILITY * 2)
            .await
            .is_none(),
        "an acked message came back"
    );
}
