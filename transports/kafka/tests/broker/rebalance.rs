//! PostgreSQL outbox → relay → Kafka (8 partitions) → two consumers of one
//! group with the PostgreSQL inbox: one effect per event and per-key order
//! through the rebalances of a second member joining and the first one
//! leaving.

use std::time::{Duration, Instant};

use crate::support::e2e::{ConsumerRun, World};
use tidings_testing::names::unique_name;
use tokio_util::sync::CancellationToken;

const ORDERS: u32 = 3_000;
const KEYS: u32 = 32;
const PAUSE: Duration = Duration::from_millis(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_consumers_rebalancing_keep_one_effect_per_event_in_key_order() {
    let world = World::new(8).await;
    world.stage_and_relay(ORDERS, KEYS).await;
    let group = unique_name("billing");
    let (first, second) = (CancellationToken::new(), CancellationToken::new());
    let start = |member: &str, cancel: &CancellationToken| {
        let run = world.consumer(&group, member, PAUSE);
        tokio::spawn(run.run_to(cancel.clone()))
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    let until = |what: &'static str, member: &'static str, at_least: i64| {
        let world = &world;
        async move {
            loop {
                let done = match member {
                    "" => world.effects().await.0,
                    member => world.effects_of(member).await,
                };
                if done >= at_least {
                    return;
                }
                assert!(
                    Instant::now() < deadline,
                    "{what}: stalled at {:?}",
                    world.effects().await
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };

    let a = start("a", &first);
    until("a quarter done", "", i64::from(ORDERS / 4)).await;
    // A second member joins: the partitions are shared out again. Wait
    // until it works, so the first does not leave during the join.
    let b = start("b", &second);
    until("the second member at work", "b", 100).await;
    // The first leaves: the second takes every partition.
    first.cancel();
    a.await.unwrap();
    let a_done = world.effects_of("a").await;
    until("everything", "", i64::from(ORDERS)).await;
    second.cancel();
    b.await.unwrap();

    assert_eq!(
        world.effects().await,
        (i64::from(ORDERS), 1),
        "(events with an effect, most effects of one event)"
    );
    assert_eq!(
        world.effects_of("a").await,
        a_done,
        "the first member worked on after leaving"
    );
    for (key, effects) in world.logs().await {
        let ids: Vec<u32> = effects.iter().map(|(id, _)| *id).collect();
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        // On failure, which member committed each effect tells a reorder
        // in the partition from one in the hand-over between members.
        assert_eq!(ids, sorted, "effects of {key} out of order: {effects:?}");
    }
    world.drop().await;
}
