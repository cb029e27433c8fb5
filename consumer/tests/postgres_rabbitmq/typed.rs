//! Per-type handlers on PostgreSQL and RabbitMQ: each type's handler runs
//! in a transaction at its own isolation level, whether the broker or the
//! stored inbox holds the message.

use crate::support::postgres_rabbitmq::{Order, World, options};

use std::time::Duration;

use sqlx::AssertSqlSafe;
use tidings_consumer::{
    Consumer, EventHandlers, HandlerError, PerTypeCodec, StoredConsumer, StoredInbox, TxHandle,
    TypeOptions, TypeRouter, Undecoded, handler_fn,
};
use tidings_core::{IsolationLevel, JsonCodec, Message};
use tidings_postgres::{PgContext, PgInboxStore, PgOutboxStore};
use tidings_rabbitmq::{QueueKind, RabbitSource};
use tidings_testing::consumer::{order_to, run_for};
use tidings_testing::eventually::eventually;
use tokio_util::sync::CancellationToken;

/// Records the isolation level of the transaction it runs in, under its
/// message's event type.
fn recorder(world: &World) -> impl tidings_consumer::Handler<Order, PgContext<'static>> {
    let sql = format!(
        "insert into {} (event_type, level) values ($1, current_setting('transaction_isolation'))",
        world.table("levels")
    );
    handler_fn(
        move |msg: Message<Order>, tx: TxHandle<PgContext<'static>>| {
            let sql = sql.clone();
            async move {
                let mut ctx = tx.lock().await;
                sqlx::query(AssertSqlSafe(sql))
                    .bind(msg.event_type())
                    .execute(ctx.tx())
                    .await?;
                Ok::<(), HandlerError>(())
            }
        },
    )
}

/// The consumer of a world with per-type handlers, as the tests run it.
type Typed =
    Consumer<RabbitSource, Undecoded, PerTypeCodec, TypeRouter<PgContext<'static>>, PgInboxStore>;

/// A world with a `levels` table, an order of each type published, and a
/// consumer whose handlers record the level each type ran at: `audit`
/// serializable, `order.placed` the store's default.
async fn world_with_orders(world: World) -> (World, Typed) {
    let create = format!(
        "create table {} (event_type text primary key, level text not null)",
        world.table("levels")
    );
    world.execute(create).await;
    for (id, event_type) in [(1, "audit"), (2, "order.placed")] {
        let mut envelope = order_to(world.queue.name(), id, None);
        envelope.event_type = event_type.to_owned();
        world.publish(&envelope).await;
    }
    let serializable = TypeOptions::default().isolation(IsolationLevel::Serializable);
    let handlers = EventHandlers::new()
        .on_with("audit", JsonCodec, recorder(&world), serializable)
        .on("order.placed", recorder(&world));
    let queue = world.queue.name().to_owned();
    let consumer = Consumer::for_types(world.source.clone(), queue, handlers)
        .unwrap()
        .inbox(world.inbox())
        .options(options());
    (world, consumer)
}

/// Runs a stored consumer until `cancel` fires. Generic over the handler,
/// as the compiler proves the task `Send` only there.
fn spawn<H>(
    consumer: StoredConsumer<RabbitSource, Undecoded, PerTypeCodec, H, PgInboxStore, PgOutboxStore>,
    cancel: &CancellationToken,
) -> tokio::task::JoinHandle<Result<(), tidings_core::StoreError>>
where
    H: tidings_consumer::Handler<Undecoded, PgContext<'static>>,
{
    let cancel = cancel.clone();
    tokio::spawn(async move { consumer.run(cancel).await })
}

async fn levels(world: &World) -> Vec<(String, String)> {
    let sql = format!(
        "select event_type, level from {} order by 1",
        world.table("levels")
    );
    sqlx::query_as(AssertSqlSafe(sql))
        .fetch_all(world.store.pool())
        .await
        .unwrap()
}

fn expected() -> Vec<(String, String)> {
    vec![
        ("audit".into(), "serializable".into()),
        ("order.placed".into(), "read committed".into()),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_type_runs_at_its_own_isolation_level() {
    let (world, consumer) = world_with_orders(World::new(QueueKind::Classic).await).await;
    let done = |r: tidings_consumer::ConsumerReport| async move { r.processed == 2 };
    let report = run_for(consumer, Duration::from_secs(30), done).await;
    assert_eq!(report.processed, 2, "{report:?}");
    assert_eq!(levels(&world).await, expected());
    world.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_type_runs_at_its_own_isolation_level_from_the_stored_inbox() {
    let (world, consumer) = world_with_orders(World::stored(QueueKind::Classic).await).await;
    let kept = world.kept.clone().expect("a stored world");
    let consumer = consumer.stored(StoredInbox::new(kept)).unwrap();
    let cancel = CancellationToken::new();
    let running = spawn(consumer, &cancel);
    let seen = eventually(Duration::from_secs(30), || levels(&world), |l| l.len() == 2).await;
    assert_eq!(seen.len(), 2, "both stored messages handled");
    cancel.cancel();
    running.await.unwrap().expect("the stored consumer ran");
    assert_eq!(levels(&world).await, expected());
    world.drop().await;
}
