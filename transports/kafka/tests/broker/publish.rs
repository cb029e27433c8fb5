//! Publishing: record layout on the wire, per-key partitions, and the
//! failures a relay must tell apart.

use crate::support;

use std::collections::HashMap;
use std::time::Duration;

use support::{client, create_topic, foreign::first_record, publisher};
use tidings_core::{PublishError, PublisherExt};
use tidings_kafka::{
    ClientOptions, KafkaPublisher, PublisherOptions, TopicOptions, Topology, TopologyError,
};
use tidings_testing::broker::envelope;
use tidings_testing::names::unique_name;

/// Records carry the CloudEvents Kafka binding's headers and the ordering
/// key as the record key.
#[tokio::test]
async fn records_use_the_kafka_binding() {
    let topic = create_topic("wire", 1).await;
    let sent = envelope(&topic, 1);
    publisher().publish(&sent).await.expect("publish");
    let (headers, body) = first_record(&topic, Duration::from_secs(10))
        .await
        .expect("record");
    let headers: HashMap<_, _> = headers.into_iter().collect();
    assert_eq!(headers["ce_id"], sent.event_id.to_string());
    assert_eq!(headers["ce_type"], "test.event");
    assert_eq!(headers["ce_source"], sent.route);
    assert_eq!(headers["ce_specversion"], "1.0");
    assert_eq!(headers["ce_partitionkey"], "key-1");
    assert_eq!(headers["content-type"], "application/json");
    assert!(headers.contains_key("ce_time"), "{headers:?}");
    assert_eq!(headers["traceparent"], sent.headers["traceparent"]);
    assert_eq!(body, sent.payload.to_vec());
}

/// A record over the size limit fails alone, permanently, with its size;
/// the rest of the batch is published.
#[tokio::test]
async fn oversized_records_fail_alone() {
    let topic = create_topic("large", 1).await;
    let options = PublisherOptions::default().max_message_bytes(64 * 1024);
    let publisher = KafkaPublisher::new(&client(), options).expect("publisher");
    let mut big = envelope(&topic, 2);
    big.payload = vec![b'x'; 100 * 1024].into();
    let batch = [envelope(&topic, 1), big, envelope(&topic, 3)];
    let results = publisher.publish_batch(&batch).await;
    assert!(results[0].is_ok() && results[2].is_ok(), "{results:?}");
    match &results[1] {
        Err(PublishError::TooLarge { size, limit }) => {
            assert!(*size > 100 * 1024, "{size}");
            assert_eq!(*limit, 64 * 1024);
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
}

/// A topic that does not exist is unroutable, and publishing to it does
/// not create it.
#[tokio::test]
async fn unknown_topics_are_unroutable_and_stay_unknown() {
    let publisher = publisher();
    let missing = unique_name("missing");
    for _ in 0..2 {
        let error = publisher.publish(&envelope(&missing, 1)).await.unwrap_err();
        assert!(
            matches!(&error, PublishError::Unroutable { destination } if *destination == missing),
            "{error:?}"
        );
        assert!(!error.is_transient());
    }
}

/// Topic names Kafka would refuse, or that could reach another topic, are
/// refused before anything is sent.
#[tokio::test]
async fn hostile_topic_names_are_refused() {
    let publisher = publisher();
    let topology = Topology::new(&client()).expect("admin");
    for name in ["orders events", "../orders", "orders\n", "örders", "", ".."] {
        let error = publisher.publish(&envelope(name, 1)).await.unwrap_err();
        assert!(
            matches!(error, PublishError::Invalid { .. }),
            "{name:?}: {error:?}"
        );
        let refused = topology.create(name, &TopicOptions::default()).await;
        assert!(
            matches!(refused, Err(TopologyError::Name(_))),
            "{name:?}: {refused:?}"
        );
    }
}

/// With no broker listening, a publish fails as transient within the
/// message timeout, so the relay retries it later.
#[tokio::test]
async fn an_unreachable_broker_is_transient() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = closed.local_addr().unwrap();
    drop(closed);
    let client = ClientOptions::new(address.to_string()).request_timeout(Duration::from_secs(2));
    let options = PublisherOptions::default().message_timeout(Duration::from_secs(2));
    let publisher = KafkaPublisher::new(&client, options).expect("publisher");
    let started = std::time::Instant::now();
    let error = publisher.publish(&envelope("orders", 1)).await.unwrap_err();
    assert!(error.is_transient(), "{error:?}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
}

/// Envelopes with the same ordering key land in one partition, in the
/// order published.
#[tokio::test]
async fn one_key_goes_to_one_partition_in_order() {
    let topic = create_topic("keys", 8).await;
    let batch: Vec<_> = (0..40)
        .map(|n| {
            let mut e = envelope(&topic, n);
            e.ordering_key = Some(format!("key-{}", n % 4));
            e
        })
        .collect();
    let results = publisher().publish_batch(&batch).await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    let partitions = support::read_all(&topic, 8, 40).await;
    let mut by_key: HashMap<String, (i32, Vec<String>)> = HashMap::new();
    for (partition, headers) in partitions {
        let key = headers["ce_partitionkey"].clone();
        let entry = by_key.entry(key).or_insert((partition, Vec::new()));
        assert_eq!(entry.0, partition, "one key in two partitions");
        entry.1.push(headers["ce_id"].clone());
    }
    for (key, (_, ids)) in by_key {
        let expected: Vec<String> = batch
            .iter()
            .filter(|e| e.ordering_key.as_deref() == Some(key.as_str()))
            .map(|e| e.event_id.to_string())
            .collect();
        assert_eq!(ids, expected, "order of {key}");
    }
}

/// Settings librdkafka refuses fail when the client is made, not at every
/// publish or subscription.
#[tokio::test]
async fn refused_client_settings_fail_at_construction() {
    let bad = client().property("fetch.max.bytes", "1024");
    let source = tidings_kafka::KafkaSource::new(&bad, tidings_kafka::SourceOptions::new("g"));
    assert!(
        matches!(source, Err(tidings_kafka::ClientError::Config(_))),
        "{source:?}"
    );
    let bad = client().property("acks", "sometimes");
    let publisher = KafkaPublisher::new(&bad, PublisherOptions::default());
    assert!(
        matches!(publisher, Err(tidings_kafka::ClientError::Config(_))),
        "{publisher:?}"
    );
}
