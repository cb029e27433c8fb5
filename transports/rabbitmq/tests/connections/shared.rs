//! One connection shared by a publisher, a source and the topology.

use crate::support;

use support::{envelope, next};
use tidings_core::{PublisherExt, Source};
use tidings_rabbitmq::{PublisherOptions, QueueOptions, RabbitConnection, SourceOptions};
use tidings_testing::faults::rabbitmq_connections_named;
use tidings_testing::names::unique_name;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publisher_source_and_topology_share_one_connection() {
    let name = unique_name("tidings-test-shared");
    let rabbit = RabbitConnection::new(support::named(&name));
    let queue = unique_name("shared");
    let options = QueueOptions::classic().expires(support::EXPIRES);
    support::expect_broker(rabbit.topology().declare_queue(&queue, options).await);
    // One confirm channel, so the batch arrives in batch order.
    let publisher = rabbit.publisher(PublisherOptions::default().confirm_channels(1));
    let source = rabbit.source(SourceOptions::default());

    let batch: Vec<_> = (0..10).map(|n| envelope(&queue, n)).collect();
    let results = publisher.publish_batch(&batch).await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    let mut stream = source.subscribe(&queue).await.expect("subscribe");
    for sent in &batch {
        let delivery = next(&mut stream).await;
        assert_eq!(delivery.envelope().event_id, sent.event_id);
        delivery.ack().await.expect("ack");
    }

    assert_eq!(rabbitmq_connections_named(&name).await, 1);
    drop(stream);
    support::expect_broker(rabbit.topology().delete_queue(&queue).await);
}
