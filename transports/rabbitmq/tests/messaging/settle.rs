//! Settling on the real broker: reasons in the dead-letter queue, exact
//! quorum counts, counts carried across delayed redeliveries, unreadable
//! messages parked by the source.

use std::time::Duration;

use crate::support::{Setup, next, raw_get};
use lapin::options::BasicPublishOptions;
use lapin::types::AMQPValue;
use lapin::{BasicProperties, Connection, ConnectionProperties};
use tidings_core::{PublisherExt, Redelivery};
use tidings_rabbitmq::{DEAD_LETTER_REASON_HEADER, QueueKind, dead_letter_queue};
use tidings_testing::services::amqp_url;

fn header(properties: &BasicProperties, name: &str) -> Option<String> {
    match properties.headers().as_ref()?.inner().get(name)? {
        AMQPValue::LongString(s) => Some(String::from_utf8_lossy(s.as_bytes()).into_owned()),
        other => panic!("{name} is not a string: {other:?}"),
    }
}

/// Waits for a message to show up in `queue` and fetches it.
async fn fetch(queue: &str) -> (BasicProperties, Vec<u8>) {
    for _ in 0..100 {
        if let Some(message) = raw_get(queue).await {
            return message;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("nothing arrived in {queue}");
}

#[tokio::test]
async fn dead_lettered_message_carries_its_reason_header() {
    for kind in [QueueKind::Classic, QueueKind::Quorum] {
        let setup = Setup::new("dead_letter", kind).await;
        let sent = setup.envelope(1);
        setup.publisher.publish(&sent).await.expect("publish");
        let mut stream = setup.subscribe(&setup.queue).await;
        next(&mut stream)
            .await
            .dead_letter("payment declined")
            .await
            .expect("dead-letter");

        let (properties, body) = fetch(&dead_letter_queue(&setup.queue)).await;
        assert_eq!(body, sent.payload.to_vec());
        assert_eq!(
            header(&properties, DEAD_LETTER_REASON_HEADER).as_deref(),
            Some("payment declined")
        );
        assert_eq!(
            properties.message_id().as_ref().map(|id| id.to_string()),
            Some(sent.event_id.to_string())
        );
        drop(stream);
        setup.delete().await;
    }
}

#[tokio::test]
async fn quorum_delivery_counts_grow_on_each_redelivery() {
    let setup = Setup::new("quorum_counts", QueueKind::Quorum).await;
    let sent = setup.envelope(1);
    setup.publisher.publish(&sent).await.expect("publish");
    let mut stream = setup.subscribe(&setup.queue).await;
    let mut counts = Vec::new();
    for round in 0..5 {
        let delivery = next(&mut stream).await;
        assert_eq!(delivery.envelope(), &sent);
        counts.push(delivery.delivery_count().expect("quorum queues count"));
        // Alternate plain requeues and delayed redeliveries, which travel
        // through the delay queue and must keep counting.
        let redelivery = if round % 2 == 0 {
            Redelivery::Now
        } else {
            Redelivery::After(Duration::from_millis(200))
        };
        delivery.nack(redelivery).await.expect("nack");
    }
    let last = next(&mut stream).await;
    counts.push(last.delivery_count().unwrap());
    last.ack().await.expect("ack");
    assert_eq!(counts, [1, 2, 3, 4, 5, 6]);
    drop(stream);
    setup.delete().await;
}

#[tokio::test]
async fn classic_delivery_counts_carry_across_delays() {
    let setup = Setup::new("classic_counts", QueueKind::Classic).await;
    setup.publisher.publish(&setup.envelope(1)).await.unwrap();
    let mut stream = setup.subscribe(&setup.queue).await;
    let mut counts = Vec::new();
    for _ in 0..3 {
        let delivery = next(&mut stream).await;
        counts.push(delivery.delivery_count().unwrap());
        let delay = Redelivery::After(Duration::from_millis(100));
        delivery.nack(delay).await.expect("nack");
    }
    let last = next(&mut stream).await;
    counts.push(last.delivery_count().unwrap());
    last.ack().await.unwrap();
    assert_eq!(counts, [1, 2, 3, 4]);
    drop(stream);
    setup.delete().await;
}

#[tokio::test]
async fn message_that_is_not_an_envelope_is_parked_by_the_source() {
    let setup = Setup::new("unreadable", QueueKind::Classic).await;
    let conn = Connection::connect(&amqp_url(), ConnectionProperties::default())
        .await
        .unwrap();
    let ch = conn.create_channel().await.unwrap();
    ch.basic_publish(
        "".into(),
        setup.queue.as_str().into(),
        BasicPublishOptions::default(),
        b"plain bytes",
        BasicProperties::default(),
    )
    .await
    .unwrap();
    let _ = conn.close(200, "OK".into()).await;
    let good = setup.envelope(2);
    setup.publisher.publish(&good).await.unwrap();

    let mut stream = setup.subscribe(&setup.queue).await;
    let delivery = next(&mut stream).await;
    assert_eq!(delivery.envelope(), &good);
    delivery.ack().await.unwrap();

    let (properties, body) = fetch(&dead_letter_queue(&setup.queue)).await;
    assert_eq!(body, b"plain bytes");
    let reason = header(&properties, DEAD_LETTER_REASON_HEADER).expect("reason");
    assert!(reason.contains("ce-specversion"), "{reason}");
    drop(stream);
    setup.delete().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_stream_hands_back_prefetched_messages_and_keeps_yielded_ones_settleable() {
    let setup = Setup::new("release", QueueKind::Classic).await;
    let batch: Vec<_> = (0..5).map(|n| setup.envelope(n)).collect();
    let results = setup.publisher.publish_batch(&batch).await;
    assert!(results.iter().all(Result::is_ok));
    let mut first = setup.subscribe(&setup.queue).await;
    let held = next(&mut first).await;
    // Let the other four be prefetched by this subscription.
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(first);

    let mut second = setup.subscribe(&setup.queue).await;
    for _ in 0..4 {
        let delivery = next(&mut second).await;
        assert_ne!(delivery.envelope().event_id, held.envelope().event_id);
        delivery.ack().await.expect("ack");
    }
    held.ack()
        .await
        .expect("a yielded delivery settles after its stream is dropped");
    drop(second);
    setup.delete().await;
}
