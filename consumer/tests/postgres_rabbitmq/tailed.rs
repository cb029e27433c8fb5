//! The stored inbox on a table read by log tailing: received messages are
//! staged through the tailed store, come back through its slot, and are
//! handled once each.

use crate::support::postgres_rabbitmq::{Order, World, options};

use std::time::Duration;

use sqlx::AssertSqlSafe;
use sqlx::postgres::PgPoolOptions;
use tidings_consumer::{Consumer, HandlerError, Inbox, StoredInbox, TxHandle, handler_fn};
use tidings_core::relay::RelayOptions;
use tidings_core::{JsonCodec, Message};
use tidings_postgres::wal::{WalOptions, WalStore};
use tidings_postgres::{LogTailing, PgContext, PgInboxStore, PgOutboxOptions, PgOutboxStore};
use tidings_rabbitmq::{QueueKind, RabbitSource};
use tidings_testing::eventually::eventually;
use tidings_testing::names::unique_name;
use tidings_testing::services::{drop_tailed_schema, logical_database_url, service_missing};
use tokio_util::sync::CancellationToken;

const ORDERS: u32 = 50;

/// A consumer of the world's queue whose handler counts each order's
/// effect in `effects` of `schema`, through the inbox's transaction.
fn counting(
    world: &World,
    inbox: Inbox<PgInboxStore>,
    schema: &str,
) -> Consumer<
    RabbitSource,
    Order,
    JsonCodec,
    impl tidings_consumer::Handler<Order, PgContext<'static>>,
    PgInboxStore,
> {
    let sql = format!(
        "insert into \"{schema}\".effects (order_id, times) values ($1, 1) \
         on conflict (order_id) do update set times = effects.times + 1"
    );
    let handler = handler_fn(
        move |msg: Message<Order>, tx: TxHandle<PgContext<'static>>| {
            let sql = sql.clone();
            async move {
                let mut ctx = tx.lock().await;
                sqlx::query(AssertSqlSafe(sql))
                    .bind(i64::from(msg.payload.id))
                    .execute(ctx.tx())
                    .await?;
                Ok::<(), HandlerError>(())
            }
        },
    );
    Consumer::new(world.source.clone(), world.queue, handler)
        .unwrap()
        .inbox(inbox)
        .options(options())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_inbox_on_a_tailed_table_handles_each_message_once() {
    let world = World::new(QueueKind::Classic).await;
    let url = logical_database_url();
    let pool = PgPoolOptions::new()
        .max_connections(8)
        .connect(&url)
        .await
        .unwrap_or_else(|e| service_missing("PostgreSQL with wal_level=logical", &url, &e));
    let schema = unique_name("tidings_tailed_inbox");
    // The handler's inbox and effects, in a store of their own.
    let marks = PgOutboxStore::new(pool.clone(), PgOutboxOptions::new().schema(&schema)).unwrap();
    marks.migrate().await.unwrap();
    let create =
        format!("create table \"{schema}\".effects (order_id int primary key, times int not null)");
    sqlx::raw_sql(AssertSqlSafe(create))
        .execute(&pool)
        .await
        .unwrap();
    // The stored messages, in a table the log is read for.
    let tailing = LogTailing::messages()
        .slot(format!("{schema}_slot"))
        .publication(format!("{schema}_pub"));
    let kept_options = PgOutboxOptions::new()
        .schema(&schema)
        .table("inbox_messages")
        .inbox_table("inbox_messages_marks")
        .log_tailing(tailing);
    let kept = PgOutboxStore::new(pool.clone(), kept_options).unwrap();
    kept.migrate().await.unwrap();

    let inbox = Inbox::new(marks.inbox(), "billing").unwrap();
    let consumer = counting(&world, inbox, &schema);
    let route = consumer.stored_route().unwrap();
    let wal = WalStore::start(kept, WalOptions::new(&url).unwrap().untyped_route(route)).unwrap();
    // A polling floor far past the test: the log and the receiving side
    // wake the handling.
    let relay = RelayOptions::default().poll_interval(Duration::from_secs(600));
    let stored = StoredInbox::new(wal.clone())
        .wakeup(wal.wakeup())
        .relay_options(relay);
    let consumer = consumer.stored(stored).unwrap();
    for id in 0..ORDERS {
        world.publish(&world.envelope(id)).await;
    }
    let cancel = CancellationToken::new();
    let running = tokio::spawn({
        let cancel = cancel.clone();
        async move { consumer.run(cancel).await }
    });

    let count = format!("select count(*), coalesce(max(times), 0) from \"{schema}\".effects");
    let effects = || async {
        sqlx::query_as::<_, (i64, i32)>(AssertSqlSafe(count.clone()))
            .fetch_one(&pool)
            .await
            .unwrap()
    };
    let done = eventually(Duration::from_secs(30), effects, |(n, _)| {
        *n == i64::from(ORDERS)
    })
    .await;
    assert_eq!(done, (i64::from(ORDERS), 1), "each order's effect once");
    cancel.cancel();
    running.await.unwrap().expect("the stored consumer ran");
    drop(wal);
    drop_tailed_schema(&pool, &schema).await;
    world.drop().await;
}
