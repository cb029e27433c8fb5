//! The stored inbox on a real RabbitMQ queue, keeping its messages in a
//! PostgreSQL table of their own beside the inbox: received messages are
//! acked once stored, wait there through a handler outage, and a consumer
//! killed mid-handling loses nothing and doubles nothing.

use crate::support::postgres_rabbitmq::{World, apply, options};

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::time::Duration;

use tidings_consumer::{Consumer, HandlerError, StoredInbox, TxHandle, handler_fn};
use tidings_core::relay::RelayOptions;
use tidings_core::{Backoff, Message, OutboxStore};
use tidings_postgres::{PgContext, PgOutboxStore};
use tidings_rabbitmq::QueueKind;
use tidings_testing::eventually::eventually;
use tokio_util::sync::CancellationToken;

use crate::support::postgres_rabbitmq::Order;

/// The consumer's name: its stored messages' route.
const CONSUMER: &str = "billing";

/// Runs a stored consumer of the world's queue with `handler` until
/// `cancel` fires.
fn start<H>(
    world: &World,
    source: tidings_rabbitmq::RabbitSource,
    inbox: tidings_inbox::Inbox<tidings_postgres::PgInboxStore>,
    table: &PgOutboxStore,
    handler: H,
    cancel: &CancellationToken,
) -> tokio::task::JoinHandle<()>
where
    H: tidings_consumer::Handler<Order, PgContext<'static>>,
{
    let stored = StoredInbox::new(table.clone())
        .retry_backoff(Backoff::new(
            Duration::from_millis(50),
            Duration::from_millis(200),
        ))
        .relay_options(
            RelayOptions::default()
                .batch_size(32)
                .publish_window(8)
                .poll_interval(Duration::from_millis(100)),
        );
    let consumer = Consumer::new(source, world.queue, handler)
        .unwrap()
        .inbox(inbox)
        .options(options())
        .stored(stored)
        .unwrap();
    let cancel = cancel.clone();
    tokio::spawn(async move {
        consumer
            .run(cancel)
            .await
            .expect("the stored consumer runs")
    })
}

/// Runs a stored consumer of the world's queue, on the world's source,
/// inbox and table, with `handler` until `cancel` fires.
fn start_in_world<H>(
    world: &World,
    handler: H,
    cancel: &CancellationToken,
) -> tokio::task::JoinHandle<()>
where
    H: tidings_consumer::Handler<Order, PgContext<'static>>,
{
    let table = world.kept.as_ref().expect("a stored world");
    start(
        world,
        world.source.clone(),
        world.inbox(),
        table,
        handler,
        cancel,
    )
}

/// The queue's ready messages, read with a passive declare.
async fn broker_holds(world: &World) -> u32 {
    use lapin::options::QueueDeclareOptions;
    use lapin::types::FieldTable;
    let url = tidings_testing::services::amqp_url();
    let conn = lapin::Connection::connect(&url, lapin::ConnectionProperties::default())
        .await
        .expect("RabbitMQ answers");
    let channel = conn.create_channel().await.unwrap();
    let options = QueueDeclareOptions {
        passive: true,
        ..QueueDeclareOptions::default()
    };
    let declared = channel
        .queue_declare(world.queue.name().into(), options, FieldTable::default())
        .await
        .expect("the queue exists");
    let _ = conn.close(200, "OK".into()).await;
    declared.message_count()
}

#[tokio::test]
async fn messages_are_acked_once_stored_and_wait_through_a_handler_outage() {
    let world = World::stored(QueueKind::Quorum).await;
    let table = world.kept.clone().expect("a stored world");
    let down = Arc::new(AtomicBool::new(true));
    let sql = world.effect_sql();
    let handler = {
        let down = down.clone();
        handler_fn(
            move |msg: Message<Order>, tx: TxHandle<PgContext<'static>>| {
                let (down, sql) = (down.clone(), sql.clone());
                async move {
                    if down.load(SeqCst) {
                        return Err(HandlerError::transient("the ledger is down"));
                    }
                    apply(&sql, &msg, &tx).await
                }
            },
        )
    };
    let cancel = CancellationToken::new();
    let task = start_in_world(&world, handler, &cancel);
    for id in 0..200 {
        world.publish(&world.envelope(id)).await;
    }
    let waiting = eventually(
        Duration::from_secs(20),
        || async { table.stats(CONSUMER).await.unwrap() },
        |s| s.pending + s.in_flight == 200,
    )
    .await;
    assert_eq!(waiting.pending + waiting.in_flight, 200, "{waiting:?}");
    assert_eq!(broker_holds(&world).await, 0, "the broker was freed");
    assert_eq!(world.effects().await, (0, 0));

    down.store(false, SeqCst);
    let effects = eventually(Duration::from_secs(30), || world.effects(), |e| e.0 == 200).await;
    assert_eq!(effects, (200, 1), "each effect once");
    let left = eventually(
        Duration::from_secs(10),
        || async { table.stats(CONSUMER).await.unwrap() },
        |s| s.pending + s.in_flight + s.failed == 0,
    )
    .await;
    assert_eq!((left.pending, left.in_flight, left.failed), (0, 0, 0));
    cancel.cancel();
    task.await.unwrap();
    world.drop().await;
}

#[tokio::test]
async fn a_consumer_killed_mid_handling_loses_and_doubles_nothing() {
    let world = World::stored(QueueKind::Quorum).await;
    let table = world.kept.clone().expect("a stored world");
    for id in 0..300 {
        world.publish(&world.envelope(id)).await;
    }
    let sql = world.effect_sql();
    let slow = {
        let sql = sql.clone();
        handler_fn(
            move |msg: Message<Order>, tx: TxHandle<PgContext<'static>>| {
                let sql = sql.clone();
                async move {
                    apply(&sql, &msg, &tx).await?;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    Ok(())
                }
            },
        )
    };
    // The first consumer runs on a runtime of its own, shut down
    // mid-handling: its tasks stop where they are and its connections
    // drop, as in a kill.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    {
        let _entered = runtime.enter();
        // A source, a pool and so an inbox and a table of its own, whose
        // connections die with the runtime.
        let options = world.store.pool().connect_options().as_ref().clone();
        let pool = sqlx::PgPool::connect_lazy_with(options);
        let own_table = PgOutboxStore::new(pool.clone(), table.options().clone()).unwrap();
        let own_store = PgOutboxStore::new(pool, world.store.options().clone()).unwrap();
        let inbox = tidings_inbox::Inbox::new(own_store.inbox(), "billing").unwrap();
        let source = world.source_with_prefetch(16);
        let cancel = CancellationToken::new();
        let _task = start(&world, source, inbox, &own_table, slow, &cancel);
    }
    let before = eventually(Duration::from_secs(30), || world.effects(), |e| e.0 >= 60).await;
    assert!(before.0 < 300, "killed mid-handling, after {}", before.0);
    runtime.shutdown_background();

    let cancel = CancellationToken::new();
    let handler = handler_fn(
        move |msg: Message<Order>, tx: TxHandle<PgContext<'static>>| {
            let sql = sql.clone();
            async move { apply(&sql, &msg, &tx).await }
        },
    );
    let task = start_in_world(&world, handler, &cancel);
    let effects = eventually(Duration::from_secs(60), || world.effects(), |e| e.0 == 300).await;
    assert_eq!(effects, (300, 1), "each effect once");
    cancel.cancel();
    task.await.unwrap();
    world.drop().await;
}
