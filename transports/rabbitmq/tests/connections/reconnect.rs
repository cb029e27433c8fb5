//! Connections closed from the server side: the source and the publisher
//! resume by themselves and nothing is lost.

use std::collections::HashSet;
use std::time::Duration;

use crate::support::{Setup, named, next};
use tidings_core::{AckError, PublishError, PublisherExt};
use tidings_rabbitmq::{PublisherOptions, QueueKind, RabbitPublisher};
use tidings_testing::faults::close_rabbitmq_connection as close_connection;
use tidings_testing::names::unique_name;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_resumes_after_its_connection_is_closed() {
    let name = unique_name("tidings-test-consumer");
    let setup = Setup::with(
        "reconnect",
        QueueKind::Quorum,
        PublisherOptions::default(),
        named(&name),
    )
    .await;
    let first: Vec<_> = (0..5).map(|n| setup.envelope(n)).collect();
    assert!(
        setup
            .publisher
            .publish_batch(&first)
            .await
            .iter()
            .all(Result::is_ok)
    );

    let mut stream = setup.subscribe(&setup.queue).await;
    let mut acked = HashSet::new();
    for _ in 0..2 {
        let delivery = next(&mut stream).await;
        acked.insert(delivery.envelope().event_id);
        delivery.ack().await.expect("ack");
    }
    let in_flight = next(&mut stream).await;
    let in_flight_id = in_flight.envelope().event_id;

    close_connection(&name).await;
    let settled = in_flight.ack().await;
    assert!(
        matches!(settled, Err(AckError::Expired | AckError::Unavailable(_))),
        "a delivery of the closed connection settled: {settled:?}"
    );

    let later = setup.envelope(5);
    setup
        .publisher
        .publish(&later)
        .await
        .expect("publish after the drop");
    let mut redelivered_in_flight = false;
    while acked.len() < 6 {
        let delivery = next(&mut stream).await;
        let id = delivery.envelope().event_id;
        if id == in_flight_id {
            redelivered_in_flight = true;
            assert!(
                delivery.delivery_count() >= Some(2),
                "{:?}",
                delivery.delivery_count()
            );
        }
        assert!(acked.insert(id), "{id} delivered again after it was acked");
        delivery.ack().await.expect("ack after reconnect");
    }
    assert!(redelivered_in_flight);
    let all: HashSet<_> = first.iter().chain([&later]).map(|e| e.event_id).collect();
    assert_eq!(acked, all);
    drop(stream);
    setup.delete().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publisher_reconnects_after_its_connection_is_closed() {
    let setup = Setup::new("republish", QueueKind::Classic).await;
    let name = unique_name("tidings-test-publisher");
    let publisher = RabbitPublisher::new(named(&name), PublisherOptions::default());
    publisher
        .publish(&setup.envelope(1))
        .await
        .expect("publish");

    close_connection(&name).await;
    let mut attempts = 0;
    loop {
        attempts += 1;
        match publisher.publish(&setup.envelope(2)).await {
            Ok(()) => break,
            Err(error) => {
                assert!(error.is_transient(), "{error:?}");
                assert!(
                    matches!(
                        error,
                        PublishError::Unavailable(_) | PublishError::Transport(_)
                    ),
                    "{error:?}"
                );
                assert!(attempts < 50, "publisher never reconnected: {error}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    let mut stream = setup.subscribe(&setup.queue).await;
    for _ in 0..2 {
        next(&mut stream).await.ack().await.expect("ack");
    }
    drop(stream);
    setup.delete().await;
}
