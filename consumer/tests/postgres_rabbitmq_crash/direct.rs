//! A message whose handler kills the consumer process.
//!
//! 2,000 orders over 8 ordering keys are staged and relayed; the handler of
//! order 300 tells the parent it started, and the parent kills the child 150
//! ms later, then starts a new one. Orders of the poison's key queue behind
//! it in the consumer, so on every death the broker counts them delivered
//! once more without their handler ever having run. Expected: order 300 is
//! parked after `max_deliveries + 1` deaths (the first delivery's start is
//! not counted), alone, and every other order has its effect exactly once.

use std::sync::Mutex;
use std::time::Duration;

use crate::support::postgres_rabbitmq::{Order, apply, options};
use crate::support::staging::{ChildSetup, declare, effect_sql, leak, store_with_effects};
use crate::{CHILD_ENV, KILL_AFTER, effects, parked_in, stage_and_relay};
use tidings_consumer::{TxHandle, handler_fn};
use tidings_core::Message;
use tidings_postgres::{PgContext, PgOutboxStore};
use tidings_rabbitmq::QueueOptions;
use tidings_testing::faults::harnessless;
use tidings_testing::names::unique_name;
use tidings_testing::services::drop_schema;

/// The test's name in its children's config.
pub(crate) const CHILD: &str = "direct";
const ORDERS: u32 = 2_000;
const KEYS: u32 = 8;
const POISON: u32 = 300;
const MAX_DELIVERIES: u32 = 5;
const PREFETCH: u16 = 64;
const CONCURRENCY: usize = 4;
/// The line the child prints when the poison's handler starts.
const REACHED: &str = "poison reached";

/// The parent: stages and relays the orders, runs children until the
/// queue is drained, and returns the figures.
pub(crate) async fn a_message_that_kills_its_consumer_is_parked_alone() -> String {
    let columns = "order_id int primary key, times int not null";
    let (store, schema) = store_with_effects("tidings_crash", columns).await;
    let queue = leak(unique_name("crash_orders"));
    let options = QueueOptions::quorum().expires(Duration::from_secs(300));
    let topology = declare(queue, options).await;

    stage_and_relay(&store, queue, ORDERS, KEYS).await;
    let parked = parked_in(queue).await;
    let crashes = run_children(&store, &schema, queue, &parked).await;

    let parked = std::mem::take(&mut *parked.lock().unwrap());
    let (handled, most, poison_handled) = effects(&store, POISON).await;
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

/// Runs consumer children one after another, killing each by PID shortly
/// after it reports the poison's handler started, until every order has
/// an effect or was parked; returns how many were killed.
async fn run_children(
    store: &PgOutboxStore,
    schema: &str,
    queue: &str,
    parked: &Mutex<Vec<(u32, String)>>,
) -> u32 {
    let config = format!("{CHILD} {schema} {queue}");
    let within = Duration::from_secs(120);
    harnessless::kill_each_time_reached(CHILD_ENV, &config, REACHED, KILL_AFTER, within, || async {
        let effects = effects(store, POISON).await;
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
pub(crate) async fn child(config: &str) {
    let child = ChildSetup::new(config, PREFETCH).await;
    let sql = effect_sql(child.schema);
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
