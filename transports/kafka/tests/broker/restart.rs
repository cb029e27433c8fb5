//! A broker restart mid-drain: the relay and the consumer recover alone
//! and nothing is lost. The broker is a private Tansu storing its log in a
//! private S3 stand-in, so it keeps records and committed offsets across
//! the restart; it is killed by its PID and started again on its port
//! while orders are still being staged, so the relay publishes before,
//! during and after the outage, and the consumer reads ahead little, so
//! it must fetch from the restarted broker.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::time::{Duration, Instant};

use support::e2e::{ConsumerRun, World, leak};
use support::private::PrivateBroker;
use tidings_core::relay::Relay;
use tidings_kafka::{ClientOptions, KafkaPublisher, PublisherOptions, TopicOptions, Topology};
use tidings_testing::names::unique_name;
use tokio_util::sync::CancellationToken;

const ORDERS: u32 = 1_000;
const KEYS: u32 = 8;
/// Orders staged at a time, every [`STAGE_EVERY`].
const CHUNK: u32 = 20;
const STAGE_EVERY: Duration = Duration::from_millis(200);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relay_and_consumer_recover_from_a_broker_restart() {
    let mut broker = PrivateBroker::start();
    // Little read-ahead: the consumer fetches again after the restart.
    let client = ClientOptions::new(broker.brokers())
        .request_timeout(Duration::from_secs(5))
        .property("queued.max.messages.kbytes", "16")
        .property("max.partition.fetch.bytes", "8192");
    let topic = leak(unique_name("orders"));
    Topology::new(&client)
        .unwrap()
        .create(topic, &TopicOptions::default().partitions(2))
        .await
        .unwrap();
    let world = World::on(client.clone(), topic).await;
    let spec = world.spec();
    let staged = Arc::new(AtomicU32::new(0));
    let staging = tokio::spawn({
        let (store, staged) = (world.store.clone(), staged.clone());
        async move {
            for first in (0..ORDERS).step_by(CHUNK as usize) {
                support::e2e::stage_range(&store, spec, first..first + CHUNK, KEYS).await;
                staged.store(first + CHUNK, SeqCst);
                tokio::time::sleep(STAGE_EVERY).await;
            }
        }
    });
    let cancel = CancellationToken::new();
    let publisher = KafkaPublisher::new(
        &client,
        PublisherOptions::default().message_timeout(Duration::from_secs(60)),
    )
    .unwrap();
    let relay = Relay::new(world.store.clone(), publisher, spec).unwrap();
    let relaying = tokio::spawn({
        let cancel = cancel.clone();
        async move { relay.run(cancel).await }
    });
    let consuming = tokio::spawn(
        world
            .consumer(&unique_name("billing"), "only", Duration::from_millis(5))
            .run_to(cancel.clone()),
    );

    let deadline = Instant::now() + Duration::from_secs(150);
    let wait_for = |count: i64| {
        let world = &world;
        async move {
            while world.effects().await.0 < count {
                assert!(
                    Instant::now() < deadline,
                    "stalled at {:?}",
                    world.effects().await
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    wait_for(i64::from(ORDERS) / 10).await;
    broker.stop();
    let staged_at_stop = staged.load(SeqCst);
    tokio::time::sleep(Duration::from_secs(3)).await;
    broker.restart();
    staging.await.unwrap();
    wait_for(i64::from(ORDERS)).await;
    cancel.cancel();
    relaying.await.unwrap().unwrap();
    consuming.await.unwrap();

    assert!(
        staged_at_stop < ORDERS,
        "the restart came after the staging"
    );
    assert_eq!(
        world.effects().await,
        (i64::from(ORDERS), 1),
        "(orders with an effect, most effects of one order)"
    );
    world.drop().await;
}
