//! A consumer with the stored inbox, killed at two points: between storing
//! a batch and acking it, and mid-handler.
//!
//! 500 orders over 8 ordering keys are staged and relayed to the queue. The
//! first child of a test stops at the test's point and says so; the parent
//! kills it 150 ms later and starts another, which runs until every order
//! has its effect. Killed before its acks, the first child leaves its
//! stored batch unacked, so the broker delivers it again to a store that
//! may still hold it; killed mid-handler, it leaves claimed rows unsettled
//! whose effects may have committed. Expected, either way: every order has
//! its effect exactly once (counted in the handler's own table), nothing
//! is parked (no failed stored row, nothing dead-lettered) and nothing is
//! left in the stored table.

use std::time::Duration;

use sqlx::AssertSqlSafe;
use tidings_consumer::{Consumer, ConsumerOptions, Handler, StoredInbox, TxHandle, handler_fn};
use tidings_core::{Message, OutboxStore, QueueSpec, Source};
use tidings_inbox::Inbox;
use tidings_postgres::{PgContext, PgInboxStore, PgOutboxStore};
use tidings_rabbitmq::QueueOptions;
use tidings_testing::faults::{HeldAcks, harnessless};
use tidings_testing::names::unique_name;
use tidings_testing::services::drop_schema;

use crate::support::postgres_rabbitmq::{Order, apply, options, stored_table};
use crate::support::staging::{ChildSetup, declare, effect_sql, leak, store_with_effects};
use crate::{CHILD_ENV, KILL_AFTER, effects, parked_in, stage_and_relay};

/// The test killing its first child between storing and acking, in its
/// children's config.
const BEFORE_ACKS: &str = "stored-before-acks";
/// The test killing its first child in a handler, in its children's config.
const MID_HANDLER: &str = "stored-mid-handler";
const ORDERS: u32 = 500;
const KEYS: u32 = 8;
const PREFETCH: u16 = 64;
const CONCURRENCY: usize = 4;
/// The order whose handler the first child of the mid-handler test stops in.
const STUCK: u32 = 100;
/// The consumer's name: its stored messages' route.
const CONSUMER: &str = "billing";
/// The line the first child prints where it stops.
const REACHED: &str = "stopped where the test kills it";

/// Killed once a batch is stored and before any of it is acked.
pub(crate) async fn killed_before_its_acks() -> String {
    killed_at(BEFORE_ACKS).await
}

/// Killed while a handler runs, its write made and not committed.
pub(crate) async fn killed_mid_handler() -> String {
    killed_at(MID_HANDLER).await
}

/// The parent: stages and relays the orders, runs children until each
/// order has its effect, and checks nothing was doubled, lost or parked.
async fn killed_at(point: &'static str) -> String {
    let columns = "order_id int primary key, times int not null";
    let (store, schema) = store_with_effects("tidings_stored_crash", columns).await;
    let create = format!("create table \"{schema}\".first_child (one int primary key)");
    sqlx::query(AssertSqlSafe(create))
        .execute(store.pool())
        .await
        .unwrap();
    let table = stored_table(&store);
    table.migrate().await.unwrap();
    let queue = leak(unique_name("stored_crash"));
    let topology = declare(
        queue,
        QueueOptions::quorum().expires(Duration::from_secs(300)),
    )
    .await;
    stage_and_relay(&store, queue, ORDERS, KEYS).await;
    let parked = parked_in(queue).await;

    let config = format!("{point} {schema} {queue}");
    let within = Duration::from_secs(120);
    let kills = harnessless::kill_each_time_reached(
        CHILD_ENV,
        &config,
        REACHED,
        KILL_AFTER,
        within,
        || {
            let (store, table, parked) = (&store, &table, &parked);
            async move {
                let (handled, most, _) = effects(store, STUCK).await;
                let kept = table.stats(CONSUMER).await.unwrap();
                let parked = parked.lock().unwrap().len();
                let drained = handled == i64::from(ORDERS) && kept.pending + kept.in_flight == 0;
                let wrong = kept.failed > 0 || parked > 0 || most > 1;
                let seen = format!("effects ({handled}, {most}), stored {kept:?}, parked {parked}");
                (drained || wrong, seen)
            }
        },
    )
    .await;

    let (handled, most, _) = effects(&store, STUCK).await;
    let kept = table.stats(CONSUMER).await.unwrap();
    let parked = std::mem::take(&mut *parked.lock().unwrap());
    drop_schema(store.pool(), &schema).await;
    topology.delete_queue(queue).await.unwrap();
    assert_eq!(kills, 1, "only the first child stops where it is killed");
    assert_eq!(
        (handled, most),
        (i64::from(ORDERS), 1),
        "(orders with an effect, most effects of one order)"
    );
    assert!(parked.is_empty(), "nothing is dead-lettered: {parked:?}");
    assert_eq!(
        (kept.pending, kept.in_flight, kept.failed),
        (0, 0, 0),
        "nothing is left in the stored table: {kept:?}"
    );
    format!("1 consumer process killed at {point}, {ORDERS} orders handled once each")
}

/// A child: a stored consumer until it is terminated. The test's first
/// child stops where the test kills it.
pub(crate) async fn child(point: &str, config: &str) {
    let setup = ChildSetup::new(config, PREFETCH).await;
    let first = first_child(&setup.store, setup.schema).await;
    let stuck = first && point == MID_HANDLER;
    let sql = effect_sql(setup.schema);
    let handler = handler_fn(
        move |msg: Message<Order>, tx: TxHandle<PgContext<'static>>| {
            let sql = sql.clone();
            async move {
                apply(&sql, &msg, &tx).await?;
                if stuck && msg.payload.id == STUCK {
                    harnessless::tell_parent(REACHED);
                    std::future::pending::<()>().await;
                }
                Ok(())
            }
        },
    );
    let stored = StoredInbox::new(stored_table(&setup.store));
    let inbox = Inbox::new(setup.store.inbox(), CONSUMER).unwrap();
    let options = options().concurrency(CONCURRENCY);
    if first && point == BEFORE_ACKS {
        let source = HeldAcks::new(setup.source, REACHED);
        consume_stored(source, setup.queue, inbox, handler, stored, options).await;
    } else {
        consume_stored(setup.source, setup.queue, inbox, handler, stored, options).await;
    }
}

/// Whether this child is the first of its test to ask: the one that stops
/// where the test kills it.
async fn first_child(store: &PgOutboxStore, schema: &str) -> bool {
    let claim = format!("insert into \"{schema}\".first_child values (1) on conflict do nothing");
    let claimed = sqlx::query(AssertSqlSafe(claim))
        .execute(store.pool())
        .await
        .unwrap();
    claimed.rows_affected() == 1
}

/// Runs a stored consumer of `queue` on `source` until the process is
/// terminated.
async fn consume_stored<S, H>(
    source: S,
    queue: &'static QueueSpec<Order>,
    inbox: Inbox<PgInboxStore>,
    handler: H,
    stored: StoredInbox<PgOutboxStore>,
    options: ConsumerOptions,
) where
    S: Source,
    H: Handler<Order, PgContext<'static>>,
{
    let consumer = Consumer::new(source, queue, handler)
        .unwrap()
        .inbox(inbox)
        .options(options)
        .stored(stored)
        .unwrap();
    let stop = harnessless::until_terminated();
    consumer.run(stop).await.expect("the stored consumer runs");
}
