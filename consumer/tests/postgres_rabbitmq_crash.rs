//! A message whose handler kills the consumer process, on a real path:
//! PostgreSQL outbox → relay → RabbitMQ quorum queue → consumer with the
//! PostgreSQL inbox, run as a child process and killed by PID.
//!
//! 2,000 orders over 8 ordering keys are staged and relayed; the handler of
//! order 300 tells the parent it started, and the parent kills the child 150
//! ms later, as the kernel's out-of-memory killer would, then starts a new
//! one. Orders of the poison's key queue behind it in the consumer, so on
//! every death the broker counts them delivered once more without their
//! handler ever having run. Expected: order 300 is parked after
//! `max_deliveries + 1` deaths (the first delivery's start is not
//! counted), alone, and every other order has its effect exactly once.
//!
//! The file is its own harness (`harness = false`): run plainly it is the
//! parent; with `TIDINGS_CRASH_CHILD` set it is the consumer child.

mod support;

use std::sync::Mutex;
use std::time::Duration;

use sqlx::AssertSqlSafe;
use support::postgres_rabbitmq::{Order, apply, options};
use support::staging::{ChildSetup, declare, leak, relay_every, stage_orders, store_with_effects};
use tidings_consumer::{TxHandle, handler_fn};
use tidings_core::{Message, OutboxSpec, Source};
use tidings_postgres::{PgContext, PgOutboxStore};
use tidings_rabbitmq::{
    ConnectionOptions, QueueOptions, RabbitSource, SourceOptions, dead_letter_queue,
};
use tidings_testing::consumer::{Parked, collect_parked};
use tidings_testing::faults::harnessless;
use tidings_testing::names::unique_name;
use tidings_testing::services::{amqp_url, drop_schema};

/// Set in the child's environment to `<schema> <queue>`.
const CHILD_ENV: &str = "TIDINGS_CRASH_CHILD";
const ORDERS: u32 = 2_000;
const KEYS: u32 = 8;
const POISON: u32 = 300;
const MAX_DELIVERIES: u32 = 5;
const PREFETCH: u16 = 64;
const CONCURRENCY: usize = 4;
/// How long the poison's handler runs before its process is killed.
const KILL_AFTER: Duration = Duration::from_millis(150);
/// The line the child prints when the poison's handler starts.
const REACHED: &str = "poison reached";

fn main() {
    tidings_testing::faults::harnessless::run(
        CHILD_ENV,
        "a_message_that_kills_its_consumer_is_parked_alone",
        |config| async move { child(&config).await },
        a_message_that_kills_its_consumer_is_parked_alone,
    );
}

/// The parent: stages and relays the orders, runs children until the
/// queue is drained, and returns the figures.
async fn a_message_that_kills_its_consumer_is_parked_alone() -> String {
    let columns = "order_id int primary key, times int not null";
    let (store, schema) = store_with_effects("tidings_crash", columns).await;
    let queue = leak(unique_name("crash_orders"));
    let options = QueueOptions::quorum().expires(Duration::from_secs(300));
    let topology = declare(queue, options).await;

    stage_and_relay(&store, queue).await;
    let parked = parked_in(queue).await;
    let crashes = run_children(&store, &schema, queue, &parked).await;

    let parked = std::mem::take(&mut *parked.lock().unwrap());
    let (handled, most, poison_handled) = effects(&store).await;
    drop_schema(store.pool(), &schema).await;
    let ids: Vec<u32> = parked.iter().map(|(id, _)| *id).collect();
    assert_eq!(
        ids,
        [POISON],
        "exactly the poison is parked; reasons: {parked:?}"
    );
    assert!(
        parked[0].1.contains("never returned") && parked[0].1.contains("max_deliveries 5"),
        "{parked:?}"
    );
    assert_eq!(
        (handled, most, poison_handled),
        (i64::from(ORDERS - 1), 1, false),
        "(orders with an effect, most effects of one order, poison handled)"
    );
    assert_eq!(
        crashes,
        MAX_DELIVERIES + 1,
        "the first start plus max_deliveries counted ones"
    );
    topology.delete_queue(queue).await.unwrap();
    format!(
        "{crashes} consumer processes killed, parked: order {}",
        ids[0]
    )
}

/// Stages the orders through the outbox and relays them all to the queue.
async fn stage_and_relay(store: &PgOutboxStore, queue: &'static str) {
    let spec: &'static OutboxSpec<Order> = Box::leak(Box::new(
        OutboxSpec::json("order-events").destination(queue),
    ));
    stage_orders(store, spec, ORDERS, KEYS).await;
    relay_every(store.clone(), spec, ORDERS, Duration::from_secs(60)).await;
}

/// Collects what lands in the dead-letter queue: `(order id, reason)`.
async fn parked_in(queue: &str) -> Parked {
    let source = RabbitSource::new(ConnectionOptions::new(amqp_url()), SourceOptions::default());
    collect_parked(source.subscribe(&dead_letter_queue(queue)).await.unwrap())
}

/// `(orders with an effect, the most effects one order had, whether the
/// poison had one)`.
async fn effects(store: &PgOutboxStore) -> (i64, i32, bool) {
    let schema = store.options().get_schema();
    let sql = format!(
        "select count(*), coalesce(max(times), 0), coalesce(bool_or(order_id = {POISON}), false) \
         from \"{schema}\".effects"
    );
    sqlx::query_as(AssertSqlSafe(sql))
        .fetch_one(store.pool())
        .await
        .unwrap()
}

/// Runs consumer children one after another, killing each by PID shortly
/// after it reports the poison's handler started, until every order has
/// an effect or was parked; returns how many were killed.
async fn run_children(
    store: &PgOutboxStore,
    schema: &str,
    queue: &str,
    parked: &Mutex<Vec<(u32, String)>>,
) -> u32 {
    let config = format!("{schema} {queue}");
    let within = Duration::from_secs(120);
    harnessless::kill_each_time_reached(CHILD_ENV, &config, REACHED, KILL_AFTER, within, || async {
        let effects = effects(store).await;
        let parked = parked.lock().unwrap().clone();
        let settled = effects.0 + parked.len() as i64;
        if settled >= i64::from(ORDERS) {
            // Give a late parking a moment to show.
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        (
            settled >= i64::from(ORDERS),
            format!("effects {effects:?}, parked {parked:?}"),
        )
    })
    .await
}

/// The child: one consumer until it is terminated.
async fn child(config: &str) {
    let child = ChildSetup::new(config, PREFETCH).await;
    let schema = child.schema;
    let sql = format!(
        "insert into \"{schema}\".effects (order_id, times) values ($1, 1) \
         on conflict (order_id) do update set times = effects.times + 1"
    );
    let handler = handler_fn(
        move |msg: Message<Order>, tx: TxHandle<PgContext<'static>>| {
            let sql = sql.clone();
            async move {
                if msg.payload.id == POISON {
                    harnessless::tell_parent(REACHED);
                    std::future::pending::<()>().await;
                }
                apply(&sql, &msg, &tx).await
            }
        },
    );
    let options = options()
        .concurrency(CONCURRENCY)
        .max_deliveries(MAX_DELIVERIES);
    child.consume(handler, options).await;
}
