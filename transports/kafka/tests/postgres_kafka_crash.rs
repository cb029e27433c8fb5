//! A message whose handler kills the consumer process, on a real path:
//! PostgreSQL outbox → relay → Kafka (4 partitions) → consumer with the
//! PostgreSQL inbox, run as a child process and killed by PID mid-batch.
//!
//! 2,000 orders over 16 ordering keys are relayed; the handler of order 300
//! tells the parent it started, and the parent kills the child (SIGKILL,
//! as the out-of-memory killer would) 150 ms later, while other handlers
//! run, then starts a new one in the same group. Each kill leaves
//! deliveries in hand and settled offsets uncommitted, so the next member
//! gets them again. Expected: order 300 is parked after `max_deliveries`
//! counted crashes, alone, and every other order has its effect exactly
//! once.
//!
//! The file is its own harness (`harness = false`): run plainly it is the
//! parent; with `TIDINGS_CRASH_CHILD` set it is the consumer child.

mod support;

use std::sync::Mutex;
use std::time::Duration;

use support::e2e::{ConsumerRun, Handling, Poison, World, consumer, leak, store_in};
use tidings_core::Source;
use tidings_kafka::{KafkaSource, SourceOptions, dead_letter_topic};
use tidings_testing::consumer::{Parked, collect_parked};
use tidings_testing::faults::harnessless;
use tidings_testing::names::unique_name;

/// Set in the child's environment to `<schema> <topic> <group>`.
const CHILD_ENV: &str = "TIDINGS_CRASH_CHILD";
const ORDERS: u32 = 2_000;
const KEYS: u32 = 16;
const POISON: u32 = 300;
const MAX_DELIVERIES: u32 = 2;
/// Each handler's work, so a kill finds deliveries in hand.
const PAUSE: Duration = Duration::from_millis(5);
/// How long the poison's handler runs before its process is killed.
const KILL_AFTER: Duration = Duration::from_millis(150);
/// The line the child prints when the poison's handler starts.
const REACHED: &str = "poison reached";

fn main() {
    harnessless::run(
        CHILD_ENV,
        "a_message_that_kills_its_consumer_is_parked_alone",
        |config| async move { child(&config).await },
        a_message_that_kills_its_consumer_is_parked_alone,
    );
}

/// The parent: relays the orders, runs children until every order has an
/// effect or was parked, and returns the figures.
async fn a_message_that_kills_its_consumer_is_parked_alone() -> String {
    let world = World::new(4).await;
    world.stage_and_relay(ORDERS, KEYS).await;
    let parked = collect_parked_of(&world).await;
    let group = unique_name("billing");
    let config = format!("{} {} {group}", world.schema, world.topic);
    let crashes = run_children(&world, &config, &parked).await;

    let parked = std::mem::take(&mut *parked.lock().unwrap());
    let mut ids: Vec<u32> = parked.iter().map(|(id, _)| *id).collect();
    // Dead-lettering republishes before it commits, so a kill between the
    // two parks the record again from the next member: copies are
    // possible, other records are not.
    let copies = ids.len();
    ids.dedup();
    assert_eq!(ids, [POISON], "exactly the poison is parked: {parked:?}");
    assert!(
        parked[0].1.contains("never returned") && parked[0].1.contains("max_deliveries 2"),
        "{parked:?}"
    );
    assert_eq!(
        world.effects().await,
        (i64::from(ORDERS - 1), 1),
        "(orders with an effect, most effects of one order)"
    );
    // The first start of a first delivery is not counted; on Kafka a
    // crash whose record was read after its new owner settled another of
    // its partition may go uncounted too, and a kill may land right after
    // a parking, before its commit.
    assert!(
        (MAX_DELIVERIES + 1..=MAX_DELIVERIES + 3).contains(&crashes),
        "{crashes} crashes before parking"
    );
    world.drop().await;
    format!(
        "{crashes} consumer processes killed, parked: order {} ({copies} copies)",
        ids[0]
    )
}

/// Collects what lands in the dead-letter topic: `(order id, reason)`.
async fn collect_parked_of(world: &World) -> Parked {
    let source =
        KafkaSource::new(&world.client, SourceOptions::new(unique_name("parked"))).unwrap();
    let stream = source
        .subscribe(&dead_letter_topic(world.topic))
        .await
        .unwrap();
    collect_parked(stream)
}

/// Runs consumer children one after another, killing each by PID shortly
/// after it reports the poison's handler started, until every order has
/// an effect or was parked; returns how many were killed.
async fn run_children(world: &World, config: &str, parked: &Mutex<Vec<(u32, String)>>) -> u32 {
    let within = Duration::from_secs(180);
    harnessless::kill_each_time_reached(CHILD_ENV, config, REACHED, KILL_AFTER, within, || async {
        let effects = world.effects().await;
        let parked = parked.lock().unwrap().clone();
        let settled = effects.0 + parked.len() as i64;
        (
            settled >= i64::from(ORDERS),
            format!("effects {effects:?}, parked {parked:?}"),
        )
    })
    .await
}

/// The child: one consumer until it is terminated.
async fn child(config: &str) {
    let mut parts = config.split(' ');
    let (Some(schema), Some(topic), Some(group)) = (parts.next(), parts.next(), parts.next())
    else {
        panic!("<schema> <topic> <group>");
    };
    let store = store_in(schema).await;
    let poison = Poison {
        id: POISON,
        reached: || harnessless::tell_parent(REACHED),
        max_deliveries: MAX_DELIVERIES,
    };
    let run = consumer(
        &support::client(),
        &store,
        schema,
        leak(topic.to_owned()),
        group,
        "child",
        Handling {
            pause: PAUSE,
            poison: Some(poison),
        },
    );
    run.run_to(harnessless::until_terminated()).await;
}
