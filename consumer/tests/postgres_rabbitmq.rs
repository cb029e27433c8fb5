//! The consumer runner on a real RabbitMQ queue with the PostgreSQL inbox.

mod e2e;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::time::Duration;

use bytes::Bytes;
use e2e::{Order, World, apply, options, run_until};
use tidings_consumer::{Consumer, HandlerError, TxHandle, handler_fn};
use tidings_core::Message;
use tidings_postgres::PgContext;
use tidings_rabbitmq::QueueKind;
use tidings_testing::faults::close_rabbitmq_connection;
use tokio_util::sync::CancellationToken;

macro_rules! counting_handler {
    ($world:expr) => {{
        let sql = $world.effect_sql();
        handler_fn(
            move |msg: Message<Order>, tx: TxHandle<PgContext<'static>>| {
                let sql = sql.clone();
                async move { apply(&sql, &msg, &tx).await }
            },
        )
    }};
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_delivered_three_times_has_its_effect_once() {
    let world = World::new(QueueKind::Quorum).await;
    let sent = world.envelope(1);
    for _ in 0..3 {
        world.publish(&sent).await;
    }
    let consumer = Consumer::new(world.source.clone(), world.queue, counting_handler!(world))
        .unwrap()
        .inbox(world.inbox())
        .options(options());
    let report = run_until(consumer, |_| async { world.effects().await.0 == 1 }).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(world.effects().await, (1, 1));
    assert_eq!(report.processed, 1);
    assert!(report.duplicates <= 2);
    world.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_handler_leaves_nothing_and_succeeds_on_redelivery() {
    let world = World::new(QueueKind::Quorum).await;
    world.publish(&world.envelope(7)).await;
    let calls = Arc::new(AtomicU32::new(0));
    let sql = world.effect_sql();
    let handler = handler_fn({
        let calls = calls.clone();
        move |msg: Message<Order>, tx: TxHandle<PgContext<'static>>| {
            let (sql, calls) = (sql.clone(), calls.clone());
            async move {
                apply(&sql, &msg, &tx).await?;
                match calls.fetch_add(1, SeqCst) {
                    0 | 1 => Err(HandlerError::transient("downstream hiccup")),
                    _ => Ok(()),
                }
            }
        }
    });
    let consumer = Consumer::new(world.source.clone(), world.queue, handler)
        .unwrap()
        .inbox(world.inbox())
        .options(options().attempts(1));
    let report = run_until(consumer, |_| async { world.effects().await.0 == 1 }).await;
    assert_eq!(
        world.effects().await,
        (1, 1),
        "a failed attempt left its write behind"
    );
    assert_eq!((report.failed, report.processed), (2, 1));
    world.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn poison_is_parked_and_does_not_block_the_queue() {
    let world = World::new(QueueKind::Quorum).await;
    world.publish(&world.envelope(666)).await;
    let mut garbage = world.envelope(0);
    garbage.payload = Bytes::from_static(b"{\"id\": \"not a number\"}");
    world.publish(&garbage).await;
    for id in 1..=5 {
        world.publish(&world.envelope(id)).await;
    }
    let calls_666 = Arc::new(AtomicU32::new(0));
    let sql = world.effect_sql();
    let handler = handler_fn({
        let calls_666 = calls_666.clone();
        move |msg: Message<Order>, tx: TxHandle<PgContext<'static>>| {
            let (sql, calls_666) = (sql.clone(), calls_666.clone());
            async move {
                assert_ne!(
                    msg.payload.id, 0,
                    "an undecodable payload reached the handler"
                );
                if msg.payload.id == 666 {
                    calls_666.fetch_add(1, SeqCst);
                    return Err(HandlerError::transient("always fails"));
                }
                apply(&sql, &msg, &tx).await
            }
        }
    });
    let consumer = Consumer::new(world.source.clone(), world.queue, handler)
        .unwrap()
        .inbox(world.inbox())
        .options(options().attempts(1).max_deliveries(3));
    // Done once the good orders are in and both bad messages are parked:
    // the poison is parked on its fourth delivery, before the handler runs,
    // so its third call comes before that park.
    let report = run_until(consumer, |report| {
        let world = &world;
        async move { report.parked == 2 && world.effects().await.0 == 5 }
    })
    .await;
    assert_eq!(world.effects().await, (5, 1));
    assert_eq!(
        calls_666.load(SeqCst),
        3,
        "the poison message ran more than max_deliveries times"
    );
    assert_eq!(report.parked, 2);
    world.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliveries_that_never_reached_a_handler_do_not_count_toward_parking() {
    use futures::StreamExt;
    use tidings_core::Source;

    let world = World::new(QueueKind::Quorum).await;
    world.publish(&world.envelope(1)).await;
    // Seven subscriptions that take the message and go away without
    // settling it, as consumer processes dying with it prefetched would.
    let mut last_count = None;
    for _ in 0..7 {
        let mut stream = world.source.subscribe(world.queue.name()).await.unwrap();
        let delivery = tokio::time::timeout(Duration::from_secs(15), stream.next())
            .await
            .expect("redelivered")
            .unwrap()
            .unwrap();
        last_count = delivery.delivery_count();
        drop((delivery, stream));
    }
    let counted = last_count.unwrap_or(0);
    assert!(counted >= 7, "the broker counted {counted} deliveries");

    let consumer = Consumer::new(world.source.clone(), world.queue, counting_handler!(world))
        .unwrap()
        .inbox(world.inbox())
        .options(options().max_deliveries(3));
    let report = run_until(consumer, |_| async { world.effects().await.0 == 1 }).await;
    assert_eq!((report.processed, report.parked), (1, 0));
    assert_eq!(world.effects().await, (1, 1));
    world.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_under_load_then_restart_applies_every_message_once() {
    let world = World::new(QueueKind::Quorum).await;
    for id in 0..150 {
        world.publish(&world.envelope(id)).await;
    }
    let first = Consumer::new(world.source.clone(), world.queue, counting_handler!(world))
        .unwrap()
        .inbox(world.inbox())
        .options(options());
    let cancel = CancellationToken::new();
    let stop = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(400)).await;
            cancel.cancel();
        })
    };
    first.run(cancel).await;
    stop.await.unwrap();
    let partial = first.report().processed;
    assert_eq!(
        world.effects().await.0 as u64,
        partial,
        "effects and acks disagree after shutdown"
    );

    let second = Consumer::new(world.source.clone(), world.queue, counting_handler!(world))
        .unwrap()
        .inbox(world.inbox())
        .options(options());
    run_until(second, |_| async { world.effects().await.0 == 150 }).await;
    assert_eq!(world.effects().await, (150, 1));
    world.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_closed_by_the_broker_mid_consume_loses_and_doubles_nothing() {
    let world = World::new(QueueKind::Quorum).await;
    for id in 0..100 {
        world.publish(&world.envelope(id)).await;
    }
    let sql = world.effect_sql();
    let slow = handler_fn(
        move |msg: Message<Order>, tx: TxHandle<PgContext<'static>>| {
            let sql = sql.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(10)).await;
                apply(&sql, &msg, &tx).await
            }
        },
    );
    let consumer = Consumer::new(world.source.clone(), world.queue, slow)
        .unwrap()
        .inbox(world.inbox())
        .options(options().concurrency(4));
    let cancel = CancellationToken::new();
    let consumer = Arc::new(consumer);
    let task = tokio::spawn({
        let (consumer, cancel) = (consumer.clone(), cancel.clone());
        async move { consumer.run(cancel).await }
    });
    while world.effects().await.0 < 20 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    close_rabbitmq_connection(&world.connection_name).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while world.effects().await.0 < 100 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    cancel.cancel();
    task.await.unwrap();
    assert_eq!(world.effects().await, (100, 1));
    world.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_key_messages_run_one_at_a_time_in_order() {
    use std::collections::{HashMap, HashSet};
    use std::sync::Mutex;

    let world = World::new(QueueKind::Quorum).await;
    let keys = ["a", "b", "c", "d", "e"];
    for id in 0..60 {
        let mut envelope = world.envelope(id);
        envelope.ordering_key = Some(keys[id as usize % keys.len()].to_owned());
        world.publish(&envelope).await;
    }
    let running: Arc<Mutex<HashSet<String>>> = Arc::default();
    let seen: Arc<Mutex<HashMap<String, Vec<i32>>>> = Arc::default();
    let overlaps = Arc::new(AtomicU32::new(0));
    let peak = Arc::new(AtomicU32::new(0));
    let sql = world.effect_sql();
    let handler = handler_fn({
        let (running, seen, overlaps, peak) = (
            running.clone(),
            seen.clone(),
            overlaps.clone(),
            peak.clone(),
        );
        move |msg: Message<Order>, tx: TxHandle<PgContext<'static>>| {
            let (sql, running, seen, overlaps, peak) = (
                sql.clone(),
                running.clone(),
                seen.clone(),
                overlaps.clone(),
                peak.clone(),
            );
            async move {
                let key = msg.ordering_key().unwrap_or_default().to_owned();
                {
                    let mut now = running.lock().unwrap();
                    if !now.insert(key.clone()) {
                        overlaps.fetch_add(1, SeqCst);
                    }
                    peak.fetch_max(now.len() as u32, SeqCst);
                }
                seen.lock()
                    .unwrap()
                    .entry(key.clone())
                    .or_default()
                    .push(msg.payload.id);
                tokio::time::sleep(Duration::from_millis(5)).await;
                let applied = apply(&sql, &msg, &tx).await;
                running.lock().unwrap().remove(&key);
                applied
            }
        }
    });
    let consumer = Consumer::new(world.source.clone(), world.queue, handler)
        .unwrap()
        .inbox(world.inbox())
        .options(options().concurrency(8));
    run_until(consumer, |_| async { world.effects().await.0 == 60 }).await;

    assert_eq!(world.effects().await, (60, 1));
    assert_eq!(
        overlaps.load(SeqCst),
        0,
        "two messages of one key ran at once"
    );
    assert!(peak.load(SeqCst) > 1, "keys never ran concurrently");
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    for (i, key) in keys.iter().enumerate() {
        let expected: Vec<i32> = (0..60)
            .filter(|id| *id as usize % keys.len() == i)
            .collect();
        assert_eq!(seen[*key], expected, "key {key} out of order");
    }
    world.drop().await;
}
