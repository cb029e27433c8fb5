//! Queue options on the real broker: single active consumer, length
//! limits, delivery limits, dead-letter queue settings, streams, and what
//! happens when an operator owns the queue.

use std::time::Duration;

use crate::support::{EXPIRES, connection, envelope, expect_broker, next, plain_channel, raw_get};
use futures::StreamExt;
use lapin::options::QueueDeclareOptions;
use lapin::types::{AMQPValue, FieldTable};
use tidings_core::{PublishError, PublisherExt, Redelivery, Source};
use tidings_rabbitmq::{
    ConnectionOptions, DeadLetterOptions, Overflow, PublisherOptions, QueueKind, QueueOptions,
    QueueOptionsError, RabbitPublisher, RabbitSource, SourceOptions, StreamOffset, Topology,
    TopologyError, TopologyMode, dead_letter_exchange, dead_letter_queue,
};
use tidings_testing::names::unique_name;

fn topology() -> Topology {
    Topology::new(connection("topology"))
}

fn publisher() -> RabbitPublisher {
    RabbitPublisher::new(connection("publisher"), PublisherOptions::default())
}

fn source(options: SourceOptions) -> RabbitSource {
    RabbitSource::new(connection("source"), options)
}

/// Messages ready in `queue`, read with a passive declare.
async fn ready(queue: &str) -> u32 {
    let (conn, ch) = plain_channel().await;
    let options = QueueDeclareOptions {
        passive: true,
        ..QueueDeclareOptions::default()
    };
    let declared = ch
        .queue_declare(queue.into(), options, FieldTable::default())
        .await
        .expect("the queue exists");
    let _ = conn.close(200, "OK".into()).await;
    declared.message_count()
}

/// Declares `queue` as an operator would, with `arguments` and no others.
async fn operator_declares(queue: &str, arguments: &[(&str, AMQPValue)]) {
    let (conn, ch) = plain_channel().await;
    let mut table = FieldTable::default();
    for (name, value) in arguments {
        table.insert((*name).into(), value.clone());
    }
    let options = QueueDeclareOptions {
        durable: true,
        ..QueueDeclareOptions::default()
    };
    ch.queue_declare(queue.into(), options, table)
        .await
        .expect("operator's declare");
    let _ = conn.close(200, "OK".into()).await;
}

fn expires_argument() -> (&'static str, AMQPValue) {
    let millis = i64::try_from(EXPIRES.as_millis()).unwrap();
    ("x-expires", AMQPValue::LongLongInt(millis))
}

#[tokio::test]
async fn options_that_do_not_go_together_are_refused_before_connecting() {
    // Nothing listens on port 1: a connect attempt would fail otherwise.
    let unreachable = Topology::new(ConnectionOptions::new("amqp://guest:guest@127.0.0.1:1/%2f"));
    let error = unreachable
        .declare_queue("orders", QueueOptions::classic().delivery_limit(5))
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            TopologyError::Options(QueueOptionsError::Unsupported {
                setting: "QueueOptions::delivery_limit",
                kind: QueueKind::Classic,
                ..
            })
        ),
        "{error:?}"
    );
    let dead_letters = QueueOptions::classic().dead_letter(
        DeadLetterOptions::default()
            .max_length(1)
            .overflow(Overflow::RejectPublishDlx),
    );
    let error = unreachable
        .declare_queue("orders", dead_letters)
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("reject-publish-dlx needs a dead-letter exchange"),
        "{error}"
    );
}

#[tokio::test]
async fn an_operator_queue_with_other_arguments_is_named_with_both_values() {
    let queue = unique_name("operator");
    let dlx = dead_letter_exchange(&queue);
    operator_declares(
        &queue,
        &[
            ("x-queue-type", AMQPValue::LongString("classic".into())),
            (
                "x-dead-letter-exchange",
                AMQPValue::LongString(dlx.as_str().into()),
            ),
            ("x-single-active-consumer", AMQPValue::Boolean(true)),
            expires_argument(),
        ],
    )
    .await;
    let topology = topology();
    let options = QueueOptions::classic().expires(EXPIRES);
    let error = topology.declare_queue(&queue, options).await.unwrap_err();
    match &error {
        TopologyError::Inequivalent {
            queue: named,
            argument,
            asked,
            current,
            setting,
        } => {
            assert_eq!(named, &queue);
            assert_eq!(argument, "x-single-active-consumer");
            assert_eq!((asked.as_deref(), current.as_deref()), (None, Some("true")));
            assert_eq!(*setting, Some("QueueOptions::single_active_consumer"));
        }
        other => panic!("{other:?}"),
    }
    let text = error.to_string();
    assert!(
        text.contains("x-single-active-consumer = true but tidings declares it not set")
            && text.contains("change QueueOptions::single_active_consumer"),
        "{text}"
    );
    // The refusal closed a channel, not the topology's connection.
    let matching = options.single_active_consumer(true);
    expect_broker(topology.declare_queue(&queue, matching).await);
    expect_broker(topology.delete_queue(&queue).await);
}

#[tokio::test]
async fn verify_mode_declares_nothing_and_names_what_is_missing() {
    let queue = unique_name("verified");
    let verify = topology().mode(TopologyMode::Verify);
    for _ in 0..2 {
        match verify.declare_queue(&queue, QueueOptions::quorum()).await {
            Err(TopologyError::Missing { missing }) => {
                assert_eq!(missing.len(), 5, "{missing:?}");
                assert!(
                    missing[0].starts_with(&format!("queue {queue:?}")),
                    "{missing:?}"
                );
                assert!(missing.iter().any(|m| m.contains(".delay")), "{missing:?}");
            }
            other => panic!("{other:?}"),
        }
    }
    // The operator's queue has arguments tidings would not declare.
    let declare = topology();
    let operator = QueueOptions::classic()
        .single_active_consumer(true)
        .max_length(1000)
        .expires(EXPIRES);
    expect_broker(declare.declare_queue(&queue, operator).await);
    expect_broker(verify.declare_queue(&queue, QueueOptions::quorum()).await);
    expect_broker(verify.verify_queue(&queue).await);
    expect_broker(declare.delete_queue(&queue).await);
}

#[tokio::test]
async fn single_active_consumer_delivers_to_one_consumer_at_a_time() {
    let queue = unique_name("single_active");
    let topology = topology();
    let options = QueueOptions::quorum()
        .single_active_consumer(true)
        .expires(EXPIRES);
    expect_broker(topology.declare_queue(&queue, options).await);
    let (first, second) = (
        source(SourceOptions::default()),
        source(SourceOptions::default()),
    );
    let mut active = first.subscribe(&queue).await.unwrap();
    let mut waiting = second.subscribe(&queue).await.unwrap();
    let publisher = publisher();
    for n in 0..10 {
        publisher.publish(&envelope(&queue, n)).await.unwrap();
    }
    for _ in 0..10 {
        next(&mut active).await.ack().await.unwrap();
    }
    let idle = tokio::time::timeout(Duration::from_millis(500), waiting.next()).await;
    assert!(idle.is_err(), "the waiting consumer got a delivery");
    drop(active);
    publisher.publish(&envelope(&queue, 10)).await.unwrap();
    let taken_over = next(&mut waiting).await;
    assert_eq!(taken_over.envelope().payload.as_ref(), b"{\"n\":10}");
    taken_over.ack().await.unwrap();
    expect_broker(topology.delete_queue(&queue).await);
}

#[tokio::test]
async fn a_full_queue_refuses_publishes_with_reject_publish() {
    // A quorum queue takes the message that goes over its limit and
    // refuses from the next one on.
    for (kind, accepted) in [(QueueKind::Classic, 2), (QueueKind::Quorum, 3)] {
        let queue = unique_name("bounded");
        let topology = topology();
        let options = QueueOptions::from(kind)
            .max_length(2)
            .overflow(Overflow::RejectPublish)
            .expires(EXPIRES);
        expect_broker(topology.declare_queue(&queue, options).await);
        let publisher = publisher();
        let mut results = Vec::new();
        for n in 0..5 {
            results.push(publisher.publish(&envelope(&queue, n)).await);
        }
        let taken = results.iter().take_while(|r| r.is_ok()).count();
        assert_eq!(taken, accepted, "{kind}: {results:?}");
        assert!(
            results[taken..]
                .iter()
                .all(|r| matches!(r, Err(PublishError::Refused { .. }))),
            "{kind}: {results:?}"
        );
        assert_eq!(ready(&queue).await, accepted as u32, "{kind}");
        expect_broker(topology.delete_queue(&queue).await);
    }
}

#[tokio::test]
async fn quorum_delivery_limit_dead_letters_a_message_redelivered_too_often() {
    let queue = unique_name("delivery_limit");
    let topology = topology();
    let options = QueueOptions::quorum().delivery_limit(2).expires(EXPIRES);
    expect_broker(topology.declare_queue(&queue, options).await);
    publisher().publish(&envelope(&queue, 1)).await.unwrap();
    let source = source(SourceOptions::default());
    let mut stream = source.subscribe(&queue).await.unwrap();
    let mut deliveries = 0;
    let parked = loop {
        tokio::select! {
            delivery = next(&mut stream) => {
                deliveries += 1;
                delivery.nack(Redelivery::Now).await.unwrap();
            }
            () = tokio::time::sleep(Duration::from_millis(300)) => {
                if let Some(parked) = raw_get(&dead_letter_queue(&queue)).await {
                    break parked;
                }
            }
        }
        assert!(
            deliveries <= 5,
            "still delivered after {deliveries} deliveries"
        );
    };
    assert_eq!(parked.1, b"{\"n\":1}");
    assert_eq!(deliveries, 3, "the first delivery and two more");
    drop(stream);
    expect_broker(topology.delete_queue(&queue).await);
}

#[tokio::test]
async fn the_dead_letter_queue_keeps_its_own_type_and_limits() {
    let queue = unique_name("dead_letter_limits");
    let topology = topology();
    let dead_letters = DeadLetterOptions::default()
        .kind(QueueKind::Classic)
        .max_length(1);
    let options = QueueOptions::quorum()
        .dead_letter(dead_letters)
        .expires(EXPIRES);
    expect_broker(topology.declare_queue(&queue, options).await);
    let publisher = publisher();
    let source = source(SourceOptions::default());
    let mut stream = source.subscribe(&queue).await.unwrap();
    for n in 0..3 {
        publisher.publish(&envelope(&queue, n)).await.unwrap();
        next(&mut stream)
            .await
            .dead_letter("refused")
            .await
            .unwrap();
    }
    let dlq = dead_letter_queue(&queue);
    assert_eq!(ready(&dlq).await, 1, "max_length 1 drops the oldest");
    let (_, body) = raw_get(&dlq).await.unwrap();
    assert_eq!(body, b"{\"n\":2}");
    // A classic dead-letter queue: declaring it as quorum is refused.
    let quorum = options.dead_letter(dead_letters.kind(QueueKind::Quorum));
    let error = topology.declare_queue(&queue, quorum).await.unwrap_err();
    assert!(
        matches!(
            &error,
            TopologyError::Inequivalent {
                setting: Some("DeadLetterOptions::kind"),
                ..
            }
        ),
        "{error:?}"
    );
    drop(stream);
    expect_broker(topology.delete_queue(&queue).await);
}

#[tokio::test]
async fn a_stream_is_read_from_the_offset_asked() {
    let queue = unique_name("stream");
    let topology = topology();
    expect_broker(topology.declare_queue(&queue, QueueOptions::stream()).await);
    let publisher = publisher();
    for n in 0..3 {
        publisher.publish(&envelope(&queue, n)).await.unwrap();
    }
    let from_first = source(SourceOptions::default().stream_offset(StreamOffset::First));
    for _ in 0..2 {
        // Consuming does not empty a stream: a second reader sees it all.
        let mut stream = from_first.subscribe(&queue).await.unwrap();
        for n in 0..3 {
            let delivery = next(&mut stream).await;
            let expected = format!("{{\"n\":{n}}}");
            assert_eq!(delivery.envelope().payload.as_ref(), expected.as_bytes());
            delivery.ack().await.unwrap();
        }
    }
    let from_next = source(SourceOptions::default().stream_offset(StreamOffset::Next));
    let mut stream = from_next.subscribe(&queue).await.unwrap();
    publisher.publish(&envelope(&queue, 3)).await.unwrap();
    let delivery = next(&mut stream).await;
    assert_eq!(delivery.envelope().payload.as_ref(), b"{\"n\":3}");
    delivery.ack().await.unwrap();
    expect_broker(topology.delete_queue(&queue).await);
}
