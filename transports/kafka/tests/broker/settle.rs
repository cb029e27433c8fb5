//! Kafka-specific settling: a delayed retry does not block its partition,
//! a new member counts a possibly unsettled record as a redelivery,
//! commits never pass an unsettled record, and a parked record says how
//! often and since when it failed.

use crate::support;

use std::time::Duration;

use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord};
use support::{client, create_topic, group, publisher};
use tidings_core::{
    DEAD_LETTER_REASON_HEADER, FIRST_FAILURE_HEADER, PARKED_AT_HEADER, PARKED_DELIVERIES_HEADER,
    PublisherExt, REPLAYED_REASON_HEADER, Redelivery,
};
use tidings_kafka::{KafkaSource, dead_letter_topic};
use tidings_testing::broker::{envelope, next, next_within, subscribe};

/// A record nacked with a delay waits in the retry topic while the records
/// behind it in its partition are delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delayed_retry_does_not_block_its_partition() {
    let topic = create_topic("retry", 1).await;
    let (first, second) = (envelope(&topic, 1), envelope(&topic, 2));
    let results = publisher()
        .publish_batch(&[first.clone(), second.clone()])
        .await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    let source = KafkaSource::new(&client(), group("retry")).expect("source");
    let mut stream = subscribe(&source, &topic).await;
    let delivery = next(&mut stream).await;
    assert_eq!(delivery.envelope().event_id, first.event_id);
    delivery
        .nack(Redelivery::After(Duration::from_secs(3)))
        .await
        .expect("nack");
    let behind = next_within(&mut stream, Duration::from_secs(2))
        .await
        .expect("the next record came before the retry was due");
    assert_eq!(behind.envelope().event_id, second.event_id);
    assert_eq!(behind.delivery_count(), Some(1));
    behind.ack().await.expect("ack");
    let retried = next(&mut stream).await;
    assert_eq!(retried.envelope(), &first);
    assert_eq!(retried.delivery_count(), Some(2));
    retried.ack().await.expect("ack");
}

/// A member that takes over a partition whose previous owner left a
/// record unsettled gets that record again, counted as a redelivery, and
/// the records after it again too, settled or not (nothing is committed
/// past an unsettled record; the inbox absorbs the duplicates); what was
/// settled below it is not delivered again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_member_resumes_at_the_lowest_unsettled_record() {
    let topic = create_topic("resume", 1).await;
    let batch: Vec<_> = (0..3).map(|n| envelope(&topic, n)).collect();
    let results = publisher().publish_batch(&batch).await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    let options = group("resume");
    let old = KafkaSource::new(&client(), options.clone()).expect("source");
    let mut stream = subscribe(&old, &topic).await;
    let d0 = next(&mut stream).await;
    let d1 = next(&mut stream).await;
    let d2 = next(&mut stream).await;
    // 0 and 2 settle, 1 is still in hand when its member goes away.
    d0.ack().await.expect("ack");
    d2.ack().await.expect("ack");
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(d1);
    drop(stream);
    // Its consumer leaves the group before the next one joins: Tansu can
    // stall a group when a member leaves during another's join.
    tokio::time::sleep(Duration::from_secs(1)).await;

    // Another process's source: it only knows the group's commits.
    let new = KafkaSource::new(&client(), options).expect("source");
    let mut stream = subscribe(&new, &topic).await;
    let again = next(&mut stream).await;
    assert_eq!(again.envelope().event_id, batch[1].event_id);
    assert_eq!(again.delivery_count(), Some(2), "a possible redelivery");
    let after = next(&mut stream).await;
    again.ack().await.expect("ack");
    assert_eq!(after.envelope().event_id, batch[2].event_id);
    assert_eq!(
        after.delivery_count(),
        Some(2),
        "read before anything settled"
    );
    after.ack().await.expect("ack");
    assert!(
        next_within(&mut stream, Duration::from_secs(1))
            .await
            .is_none(),
        "record 0 was settled and committed"
    );
}

/// A record parked after a retry carries the deliveries it had, when it
/// was parked, and when it first failed (recorded by its first retry); a
/// copy of it sent back with the reason in the replay header hands the
/// reason to the handler.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_record_says_how_often_and_since_when_it_failed() {
    let topic = create_topic("park", 1).await;
    let event = envelope(&topic, 1);
    publisher().publish(&event).await.expect("publish");
    let source = KafkaSource::new(&client(), group("park")).expect("source");
    let mut stream = subscribe(&source, &topic).await;
    next(&mut stream)
        .await
        .nack(Redelivery::After(Duration::from_millis(200)))
        .await
        .expect("nack");
    let retried = next(&mut stream).await;
    assert_eq!(retried.delivery_count(), Some(2));
    retried
        .dead_letter("handler: bad total")
        .await
        .expect("park");

    let records = support::read_all(&dead_letter_topic(&topic), 1, 1).await;
    let parked = &records[0].1;
    assert_eq!(parked[PARKED_DELIVERIES_HEADER], "2", "{parked:?}");
    let at = |name: &str| parked[name].parse::<u64>().expect(name);
    let failing = at(PARKED_AT_HEADER) - at(FIRST_FAILURE_HEADER);
    assert!(
        failing >= 200,
        "first failure not kept from the retry: {parked:?}"
    );

    let mut headers = OwnedHeaders::new();
    for (name, value) in parked.iter().filter(|(n, _)| !n.starts_with("x-")) {
        headers = headers.insert(Header {
            key: name,
            value: Some(value.as_bytes()),
        });
    }
    headers = headers.insert(Header {
        key: REPLAYED_REASON_HEADER,
        value: Some(parked[DEAD_LETTER_REASON_HEADER].as_bytes()),
    });
    let producer: FutureProducer = client().client_config().create().expect("producer");
    let copy = FutureRecord::<[u8], [u8]>::to(&topic)
        .payload(&event.payload[..])
        .headers(headers);
    producer
        .send(copy, Duration::from_secs(10))
        .await
        .expect("send the copy");
    let replayed = next(&mut stream).await;
    assert_eq!(replayed.envelope().event_id, event.event_id);
    assert_eq!(
        replayed.envelope().headers.get(REPLAYED_REASON_HEADER),
        Some(&"handler: bad total".to_owned())
    );
    replayed.ack().await.expect("ack");
}
