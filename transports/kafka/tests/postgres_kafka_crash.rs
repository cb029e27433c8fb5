//! Consumers killed mid-batch, on a real path: PostgreSQL outbox → relay →
//! Kafka (4 partitions) → consumer with the PostgreSQL inbox, run as a
//! child process and killed by PID.
//!
//! 2,000 orders over 16 ordering keys are relayed; a child consumer is
//! killed (SIGKILL, as the out-of-memory killer would) once a third of the
//! orders have their effect, a second once two thirds have, and a third
//! one drains the rest. Each kill leaves deliveries in hand and settled
//! offsets uncommitted, so the next member of the group gets them again.
//! Expected: every order has its effect exactly once.
//!
//! The file is its own harness (`harness = false`): run plainly it is the
//! parent; with `TIDINGS_CRASH_CHILD` set it is the consumer child.

mod common;
mod e2e;

use std::io::{BufRead, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

use e2e::{ConsumerRun, World, consumer, leak, store_in};
use tidings_testing::names::unique_name;
use tokio_util::sync::CancellationToken;

/// Set in the child's environment to `<schema> <topic> <group>`.
const CHILD_ENV: &str = "TIDINGS_CRASH_CHILD";
const ORDERS: i32 = 2_000;
const KEYS: i32 = 16;
/// Each handler's work, so a kill finds deliveries in hand.
const PAUSE: Duration = Duration::from_millis(10);

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    match std::env::var(CHILD_ENV) {
        Ok(config) => runtime.block_on(child(&config)),
        Err(_) => {
            let started = Instant::now();
            let figures = runtime.block_on(consumers_killed_mid_batch_leave_one_effect_per_event());
            let mut err = std::io::stderr();
            writeln!(
                err,
                "test consumers_killed_mid_batch_leave_one_effect_per_event ... ok ({figures}, {:.1} s)",
                started.elapsed().as_secs_f64()
            )
            .unwrap();
            writeln!(err, "1 passed, 0 failed").unwrap();
        }
    }
}

async fn consumers_killed_mid_batch_leave_one_effect_per_event() -> String {
    let world = World::new(4).await;
    world.stage_and_relay(ORDERS, KEYS).await;
    let group = unique_name("billing");
    let config = format!("{} {} {group}", world.schema, world.topic);
    let deadline = Instant::now() + Duration::from_secs(180);
    let mut killed_at = Vec::new();
    for third in 1..=3 {
        let mut child = tokio::process::Command::new(std::env::current_exe().unwrap())
            .env(CHILD_ENV, &config)
            .stdin(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let target = i64::from(ORDERS) * third / 3;
        loop {
            let (done, _) = world.effects().await;
            if done >= target {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "stalled at {:?} in child {third}",
                world.effects().await
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        if third < 3 {
            child.kill().await.unwrap();
            killed_at.push(world.effects().await.0);
        } else {
            drop(child.stdin.take());
            let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
                .await
                .expect("the child stops when its input closes")
                .unwrap();
            assert!(status.success(), "{status}");
        }
    }
    assert_eq!(
        world.effects().await,
        (i64::from(ORDERS), 1),
        "(orders with an effect, most effects of one order)"
    );
    world.drop().await;
    format!("children killed with {killed_at:?} orders done")
}

/// The child: one consumer until its input closes.
async fn child(config: &str) {
    let mut parts = config.split(' ');
    let (Some(schema), Some(topic), Some(group)) = (parts.next(), parts.next(), parts.next())
    else {
        panic!("<schema> <topic> <group>");
    };
    let store = store_in(schema).await;
    let run = consumer(
        &common::client(),
        &store,
        schema,
        leak(topic.to_owned()),
        group,
        "child",
        PAUSE,
    );
    let cancel = CancellationToken::new();
    std::thread::spawn({
        let cancel = cancel.clone();
        move || {
            for _ in std::io::stdin().lock().lines() {}
            cancel.cancel();
        }
    });
    run.run_to(cancel).await;
}
