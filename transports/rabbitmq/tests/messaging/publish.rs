//! Publishing: per-message failures never fail the rest of a batch.

use crate::support;

use bytes::Bytes;
use support::{Setup, envelope, next};
use tidings_core::{Envelope, PublishBatch, PublishError, Publisher, PublisherExt, Queued};
use tidings_rabbitmq::{ConnectionOptions, PublisherOptions, QueueKind};

#[tokio::test]
async fn missing_exchange_fails_only_its_message() {
    let setup = Setup::new("missing_exchange", QueueKind::Classic).await;
    let missing = tidings_testing::names::unique_name("no_such_exchange");
    let batch = vec![
        setup.envelope(1),
        envelope(&missing, 2),
        setup.envelope(3),
        envelope(&missing, 4),
        setup.envelope(5),
    ];
    let results = setup.publisher.publish_batch(&batch).await;
    assert!(
        results[0].is_ok() && results[2].is_ok() && results[4].is_ok(),
        "{results:?}"
    );
    for failed in [&results[1], &results[3]] {
        let err = failed.as_ref().unwrap_err();
        assert!(
            matches!(err, PublishError::Unroutable { destination } if *destination == missing),
            "{err:?}"
        );
        assert!(!err.is_transient());
    }
    let mut stream = setup.subscribe(&setup.queue).await;
    let mut seen = Vec::new();
    for _ in 0..3 {
        let delivery = next(&mut stream).await;
        seen.push(delivery.envelope().event_id);
        delivery.ack().await.unwrap();
    }
    seen.sort();
    let mut expected: Vec<_> = [0, 2, 4].iter().map(|i| batch[*i].event_id).collect();
    expected.sort();
    assert_eq!(seen, expected);
    drop(stream);
    setup.delete().await;
}

#[tokio::test]
async fn a_batch_on_one_confirm_channel_arrives_in_batch_order() {
    let options = PublisherOptions::default().confirm_channels(1);
    let setup = Setup::classic("batch_order", options).await;
    let batch: Vec<_> = (0..300).map(|n| setup.envelope(n)).collect();

    let results = setup.publisher.publish_batch(&batch).await;

    assert!(results.iter().all(Result::is_ok), "{results:?}");
    let mut stream = setup.subscribe(&setup.queue).await;
    let mut seen = Vec::with_capacity(batch.len());
    for _ in 0..batch.len() {
        let delivery = next(&mut stream).await;
        seen.push(delivery.envelope().event_id);
        delivery.ack().await.unwrap();
    }
    let sent: Vec<_> = batch.iter().map(|e| e.event_id).collect();
    assert_eq!(seen, sent);
    drop(stream);
    setup.delete().await;
}

const KEYS: [&str; 7] = ["a", "b", "c", "d", "e", "f", "g"];

/// 350 messages over seven ordering keys, on a publisher with four confirm
/// channels.
async fn keyed(name: &str) -> (Setup, Vec<Envelope>) {
    let options = PublisherOptions::default().confirm_channels(4);
    let setup = Setup::classic(name, options).await;
    let batch = (0..350)
        .map(|n| {
            let mut envelope = setup.envelope(n);
            envelope.ordering_key = Some(KEYS[n as usize % KEYS.len()].to_owned());
            envelope
        })
        .collect();
    (setup, batch)
}

/// Receives `sent`'s messages and checks each key's are in `sent`'s order.
async fn assert_each_key_in_order(setup: Setup, sent: &[Envelope]) {
    let mut stream = setup.subscribe(&setup.queue).await;
    let mut seen = Vec::with_capacity(sent.len());
    for _ in 0..sent.len() {
        let delivery = next(&mut stream).await;
        seen.push(delivery.envelope().clone());
        delivery.ack().await.unwrap();
    }
    for key in KEYS {
        let of_key = |list: &[Envelope]| -> Vec<_> {
            let list = list
                .iter()
                .filter(|e| e.ordering_key.as_deref() == Some(key));
            list.map(|e| e.event_id).collect()
        };
        assert_eq!(of_key(&seen), of_key(sent), "key {key}");
    }
    drop(stream);
    setup.delete().await;
}

#[tokio::test]
async fn a_keys_messages_keep_their_order_over_several_confirm_channels() {
    let (setup, batch) = keyed("key_order").await;

    for window in batch.chunks(70) {
        let results = setup.publisher.publish_batch(window).await;
        assert!(results.iter().all(Result::is_ok), "{results:?}");
    }

    assert_each_key_in_order(setup, &batch).await;
}

#[tokio::test]
async fn batches_handed_over_once_the_last_is_queued_keep_each_keys_order() {
    let (setup, batch) = keyed("queued_order").await;

    let mut answers = Vec::new();
    for window in batch.chunks(70) {
        let (queued, wait) = Queued::new();
        let publisher = setup.publisher.clone();
        let window = window.to_vec();
        answers.push(tokio::spawn(async move {
            publisher.send(PublishBatch::queued(&window, queued)).await
        }));
        // The next batch goes as soon as this one is queued, while its
        // confirms are still on their way.
        wait.await;
    }
    for answer in answers {
        let results = answer.await.unwrap();
        assert!(results.iter().all(Result::is_ok), "{results:?}");
    }

    assert_each_key_in_order(setup, &batch).await;
}

#[tokio::test]
async fn unroutable_mandatory_publish_fails_only_its_message() {
    let setup = Setup::new("unroutable", QueueKind::Classic).await;
    // The exchange exists but nothing is bound with this routing key.
    let options = PublisherOptions::default().destination(
        "elsewhere",
        tidings_rabbitmq::DestinationOptions::default().exchange(setup.queue.clone()),
    );
    let publisher =
        tidings_rabbitmq::RabbitPublisher::new(support::connection("publisher"), options);
    let batch = vec![
        setup.envelope(1),
        envelope("elsewhere", 2),
        setup.envelope(3),
    ];
    let results = publisher.publish_batch(&batch).await;
    assert!(results[0].is_ok() && results[2].is_ok(), "{results:?}");
    assert!(
        matches!(&results[1], Err(PublishError::Unroutable { destination }) if destination == "elsewhere"),
        "{results:?}"
    );
    setup.delete().await;
}

/// Publishes messages 1 to 3 of `setup` in one batch, the second with a
/// payload of `size` bytes; checks the others went through and returns
/// the second's error.
async fn publish_one_oversized(setup: &Setup, size: usize) -> PublishError {
    let mut big = setup.envelope(2);
    big.payload = Bytes::from(vec![b'x'; size]);
    let batch = [setup.envelope(1), big, setup.envelope(3)];
    let mut results = setup.publisher.publish_batch(&batch).await;
    assert!(results[0].is_ok() && results[2].is_ok(), "{results:?}");
    results.swap_remove(1).unwrap_err()
}

#[tokio::test]
async fn oversized_message_is_refused_before_sending() {
    let options = PublisherOptions::default().max_message_size(1024);
    let setup = Setup::classic("too_large", options).await;
    let err = publish_one_oversized(&setup, 2048).await;
    assert!(
        matches!(
            &err,
            PublishError::TooLarge {
                size: 2048,
                limit: 1024
            }
        ),
        "{err:?}"
    );
    assert!(!err.is_transient());
    assert_eq!(
        err.to_string(),
        "message of 2048 bytes exceeds the broker limit of 1024 bytes"
    );
    setup.delete().await;
}

/// The broker's own limit (128 MiB on RabbitMQ 3.10) closes the channel;
/// the publisher reports it for that message and resends the others.
#[tokio::test]
async fn message_above_the_broker_limit_fails_only_its_message() {
    let options = PublisherOptions::default().max_message_size(usize::MAX);
    let setup = Setup::classic("broker_limit", options).await;
    let size = PublisherOptions::DEFAULT_MAX_MESSAGE_SIZE + 1;
    let err = publish_one_oversized(&setup, size).await;
    assert!(matches!(err, PublishError::TooLarge { .. }), "{err:?}");
    assert!(!err.is_transient());
    setup.delete().await;
}

#[tokio::test]
async fn unrepresentable_headers_fail_only_their_message() {
    let setup = Setup::new("bad_headers", QueueKind::Classic).await;
    let mut long_name = setup.envelope(2);
    long_name.headers.insert("n".repeat(256), "v".into());
    let mut huge_headers = setup.envelope(3);
    huge_headers
        .headers
        .insert("big".into(), "v".repeat(200_000));
    let mut long_type = setup.envelope(4);
    long_type.event_type = "t".repeat(300);
    let batch = [
        setup.envelope(1),
        long_name,
        huge_headers,
        long_type,
        setup.envelope(5),
    ];
    let results = setup.publisher.publish_batch(&batch).await;
    assert!(results[0].is_ok() && results[4].is_ok(), "{results:?}");
    for (i, what) in [(1, "header name"), (2, "frame"), (3, "event type")] {
        let err = results[i].as_ref().unwrap_err();
        assert!(
            matches!(err, PublishError::Invalid { reason } if reason.contains(what)),
            "{err:?}"
        );
        assert!(!err.is_transient());
    }
    setup.delete().await;
}

/// Publishing to an internal exchange makes the broker close the channel
/// with ACCESS_REFUSED, in words that do not say which message it was: the
/// messages left go one at a time until the one at fault is found, and
/// every other message of the batch is published.
#[tokio::test]
async fn a_refusal_the_broker_does_not_attribute_fails_only_its_message() {
    let setup = Setup::new("refused", QueueKind::Classic).await;
    let sealed = tidings_testing::names::unique_name("sealed");
    support::declare_internal_exchange(&sealed).await;
    let options = PublisherOptions::default().destination(
        "sealed",
        tidings_rabbitmq::DestinationOptions::default().exchange(sealed.clone()),
    );
    let publisher =
        tidings_rabbitmq::RabbitPublisher::new(support::connection("publisher"), options);
    let bad = [17, 31];
    let batch: Vec<_> = (0..40)
        .map(|n| match bad.contains(&n) {
            true => envelope("sealed", n),
            false => setup.envelope(n),
        })
        .collect();

    let results = publisher.publish_batch(&batch).await;

    for (n, result) in results.iter().enumerate() {
        match bad.contains(&(n as u32)) {
            true => {
                let err = result.as_ref().unwrap_err();
                assert!(
                    matches!(err, PublishError::Invalid { reason } if reason.contains("ACCESS_REFUSED")),
                    "{err:?}"
                );
                assert!(!err.is_transient());
            }
            false => assert!(result.is_ok(), "message {n}: {result:?}"),
        }
    }
    let mut expected: std::collections::HashSet<_> = batch
        .iter()
        .filter(|e| e.destination != "sealed")
        .map(|e| e.event_id)
        .collect();
    let mut stream = setup.subscribe(&setup.queue).await;
    while !expected.is_empty() {
        let delivery = next(&mut stream).await;
        expected.remove(&delivery.envelope().event_id);
        delivery.ack().await.unwrap();
    }
    drop(stream);
    support::delete_exchange(&sealed).await;
    setup.delete().await;
}

#[tokio::test]
async fn unreachable_broker_is_a_transient_error() {
    let options = ConnectionOptions::new("amqp://guest:guest@127.0.0.1:1/%2f");
    let publisher = tidings_rabbitmq::RabbitPublisher::new(options, PublisherOptions::default());
    let err = publisher
        .publish(&envelope("anywhere", 1))
        .await
        .unwrap_err();
    assert!(matches!(err, PublishError::Unavailable(_)), "{err:?}");
    assert!(err.is_transient());
}
