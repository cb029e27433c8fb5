//! Publishing against SQS: batch limits, oversized messages, FIFO order and
//! deduplication, delays and payload encodings.

use std::collections::HashSet;
use std::time::Duration;

use crate::support::{client, declare, publish_all, queue_name, source_options};
use bytes::Bytes;
use tidings_core::{Envelope, PublishError, PublisherExt};
use tidings_sqs::aws_sdk_sqs::Client;
use tidings_sqs::{DestinationOptions, PublisherOptions, QueueOptions, SqsPublisher, SqsSource};
use tidings_testing::broker::{envelope, next, next_within, subscribe};

/// A client and a new queue with default settings.
async fn fresh_queue(prefix: &str, fifo: bool) -> (Client, String) {
    let client = client().await;
    let queue = queue_name(prefix, fifo);
    declare(&client, &queue, QueueOptions::default()).await;
    (client, queue)
}

/// The event ids of `events` with ordering key `key`, in their order.
fn ids_of_key(events: &[Envelope], key: &str) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.ordering_key.as_deref() == Some(key))
        .map(|e| e.event_id.to_string())
        .collect()
}

/// Receives and acks `count` deliveries; returns their event ids in order.
async fn drain(source: &SqsSource, queue: &str, count: usize) -> Vec<Envelope> {
    let mut stream = subscribe(source, queue).await;
    let mut seen = Vec::with_capacity(count);
    for _ in 0..count {
        let delivery = next(&mut stream).await;
        seen.push(delivery.envelope().clone());
        delivery.ack().await.expect("ack");
    }
    assert!(
        next_within(&mut stream, Duration::from_secs(1))
            .await
            .is_none(),
        "more deliveries than published"
    );
    seen
}

fn oversized(queue: &str, bytes: usize) -> Envelope {
    let mut env = envelope(queue, 999);
    env.payload = Bytes::from("x".repeat(bytes));
    env
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_of_25_with_one_oversized_event_publishes_24() {
    let (client, queue) = fresh_queue("batch25", false).await;
    let publisher = SqsPublisher::new(client.clone(), PublisherOptions::default());
    let mut batch: Vec<_> = (0..25).map(|n| envelope(&queue, n)).collect();
    batch[12] = oversized(&queue, 300 * 1024);

    let results = publisher.publish_batch(&batch).await;
    assert_eq!(results.len(), 25);
    for (n, result) in results.iter().enumerate() {
        if n == 12 {
            let error = result.as_ref().expect_err("oversized event published");
            assert!(
                matches!(error, PublishError::TooLarge { limit: 262_144, .. }),
                "{error:?}"
            );
            assert!(!error.is_transient());
            assert!(
                error.to_string().contains("exceeds the broker limit"),
                "{error}"
            );
        } else {
            assert!(result.is_ok(), "event {n}: {result:?}");
        }
    }

    let source = SqsSource::new(client, source_options());
    let received: HashSet<_> = drain(&source, &queue, 24)
        .await
        .iter()
        .map(|e| e.event_id)
        .collect();
    let expected: HashSet<_> = batch
        .iter()
        .enumerate()
        .filter(|(n, _)| *n != 12)
        .map(|(_, e)| e.event_id)
        .collect();
    assert_eq!(received, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_sqs_itself_refuses_as_too_large_fails_alone() {
    let (client, queue) = fresh_queue("sqslimit", false).await;
    // Above moto's 1 MiB limit but allowed here, so SQS refuses the call.
    let options = PublisherOptions::default().max_message_size(4 * 1024 * 1024);
    let publisher = SqsPublisher::new(client.clone(), options);
    let batch = vec![
        envelope(&queue, 1),
        oversized(&queue, 1024 * 1024 + 1),
        envelope(&queue, 3),
    ];

    let results = publisher.publish_batch(&batch).await;
    assert!(results[0].is_ok() && results[2].is_ok(), "{results:?}");
    assert!(
        matches!(results[1], Err(PublishError::TooLarge { .. })),
        "{results:?}"
    );
    let source = SqsSource::new(client, source_options());
    assert_eq!(drain(&source, &queue, 2).await.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifo_events_of_one_key_arrive_in_publish_order() {
    let (client, queue) = fresh_queue("fifoorder", true).await;
    let publisher = SqsPublisher::new(client.clone(), PublisherOptions::default());
    let mut sent = Vec::new();
    for round in 0..3 {
        let batch: Vec<_> = (0..12)
            .map(|n| {
                let mut env = envelope(&queue, round * 12 + n);
                env.ordering_key = Some(if n % 3 == 0 { "b" } else { "a" }.to_owned());
                env
            })
            .collect();
        publish_all(&publisher, &batch).await;
        sent.extend(batch);
    }

    let source = SqsSource::new(client, source_options());
    let received = drain(&source, &queue, sent.len()).await;
    for key in ["a", "b"] {
        assert_eq!(
            ids_of_key(&received, key),
            ids_of_key(&sent, key),
            "order of key {key}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifo_delivers_an_event_published_twice_once() {
    let (client, queue) = fresh_queue("fifodedup", true).await;
    let publisher = SqsPublisher::new(client.clone(), PublisherOptions::default());
    let event = envelope(&queue, 1);
    publisher.publish(&event).await.expect("first publish");
    publisher.publish(&event).await.expect("second publish");
    let results = publisher
        .publish_batch(&[event.clone(), event.clone()])
        .await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");

    let source = SqsSource::new(client, source_options());
    let received = drain(&source, &queue, 1).await;
    assert_eq!(received[0].event_id, event.event_id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifo_events_without_key_use_the_default_group() {
    let (client, queue) = fresh_queue("fifonokey", true).await;
    let options = PublisherOptions::default().default_message_group("orders");
    let publisher = SqsPublisher::new(client.clone(), options);
    let batch: Vec<_> = (0..5)
        .map(|n| {
            let mut env = envelope(&queue, n);
            env.ordering_key = None;
            env
        })
        .collect();
    publish_all(&publisher, &batch).await;

    let source = SqsSource::new(client, source_options());
    let received: Vec<_> = drain(&source, &queue, 5)
        .await
        .iter()
        .map(|e| e.event_id)
        .collect();
    let sent: Vec<_> = batch.iter().map(|e| e.event_id).collect();
    assert_eq!(received, sent, "one group, so publish order");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_destination_delay_holds_messages_back() {
    let (client, queue) = fresh_queue("delayed", false).await;
    let options = PublisherOptions::default().destination(
        &queue,
        DestinationOptions::default().delay(Duration::from_secs(3)),
    );
    let publisher = SqsPublisher::new(client.clone(), options);
    publisher
        .publish(&envelope(&queue, 1))
        .await
        .expect("publish");

    let source = SqsSource::new(client, source_options());
    let mut stream = subscribe(&source, &queue).await;
    assert!(
        next_within(&mut stream, Duration::from_millis(1500))
            .await
            .is_none(),
        "delivered before its delay"
    );
    next(&mut stream).await.ack().await.expect("ack");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_and_empty_payloads_arrive_intact() {
    let (client, queue) = fresh_queue("payloads", false).await;
    let publisher = SqsPublisher::new(client.clone(), PublisherOptions::default());
    let payloads = [
        Bytes::from_static(&[0, 1, 2, 255, 254]),
        Bytes::new(),
        Bytes::from_static(b"tab\tand\ncontrol\x07"),
    ];
    let batch: Vec<_> = payloads
        .iter()
        .enumerate()
        .map(|(n, payload)| {
            let mut env = envelope(&queue, n as u32);
            env.payload = payload.clone();
            env.content_type = "application/octet-stream".into();
            env
        })
        .collect();
    publish_all(&publisher, &batch).await;

    let source = SqsSource::new(client, source_options());
    let mut received = drain(&source, &queue, 3).await;
    received.sort_by_key(|e| e.event_id);
    let mut sent = batch;
    sent.sort_by_key(|e| e.event_id);
    assert_eq!(received, sent);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifo_keys_that_are_no_legal_group_still_keep_their_order() {
    let (client, queue) = fresh_queue("fifobadkey", true).await;
    let publisher = SqsPublisher::new(client.clone(), PublisherOptions::default());
    let keys = ["k".repeat(200), "a key with spaces".to_owned()];
    let batch: Vec<_> = (0..10)
        .map(|n| {
            let mut env = envelope(&queue, n);
            env.ordering_key = Some(keys[n as usize % 2].clone());
            env
        })
        .collect();
    publish_all(&publisher, &batch).await;

    let source = SqsSource::new(client, source_options());
    let received = drain(&source, &queue, batch.len()).await;
    for key in &keys {
        assert_eq!(ids_of_key(&received, key), ids_of_key(&batch, key));
    }
}
