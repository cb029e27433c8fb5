//! Per-key order across consumer replicas, on a real path: PostgreSQL
//! outbox → per-key relay → RabbitMQ quorum queue with a single active
//! consumer → three consumer processes with the PostgreSQL inbox and
//! strict key order.
//!
//! 1,200 orders over 6 ordering keys are staged; three consumer children
//! subscribe, the relay starts, and the parent kills the active child
//! (SIGKILL, by PID) once a third and again once two thirds of the orders
//! have their effect, so the broker hands the queue to a waiting replica
//! twice, with the killed one's unsettled deliveries going back to the
//! queue. Expected: every order has its effect exactly once, and each
//! key's effects committed in staging order.
//!
//! The file is its own harness (`harness = false`): run plainly it is the
//! parent; with `TIDINGS_REPLICA_CHILD` set it is a consumer child.

mod support;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use sqlx::AssertSqlSafe;
use support::postgres_rabbitmq::{Order, options};
use support::staging::{ChildSetup, declare, leak, relay_every, stage_orders, store_with_effects};
use tidings_consumer::{HandlerError, KeyOrder, TxHandle, handler_fn};
use tidings_core::{Message, OutboxSpec};
use tidings_postgres::{PgContext, PgOutboxStore};
use tidings_rabbitmq::QueueOptions;
use tidings_testing::faults::{ChildProcess, harnessless};
use tidings_testing::names::unique_name;
use tidings_testing::services::drop_schema;
use tokio::sync::mpsc;

/// Set in a child's environment to `<schema> <queue>`.
const CHILD_ENV: &str = "TIDINGS_REPLICA_CHILD";
const ORDERS: u32 = 1_200;
const KEYS: u32 = 6;
const REPLICAS: usize = 3;
const KILLS: usize = 2;
const PREFETCH: u16 = 32;
const CONCURRENCY: usize = 4;
/// The line a child prints when its handler first runs: it is active.
const ACTIVE: &str = "active";

fn main() {
    tidings_testing::faults::harnessless::run(
        CHILD_ENV,
        "each_key_keeps_its_order_across_killed_replicas",
        |config| async move { child(&config).await },
        each_key_keeps_its_order_across_killed_replicas,
    );
}

/// The parent: runs the replicas and the relay, kills the active replica
/// twice, and checks the effects.
async fn each_key_keeps_its_order_across_killed_replicas() -> String {
    let columns = "seq bigserial primary key, order_id int not null, key int not null";
    let (store, schema) = store_with_effects("tidings_replicas", columns).await;
    let queue = leak(unique_name("replica_orders"));
    let queue_options = QueueOptions::quorum()
        .single_active_consumer(true)
        .expires(Duration::from_secs(300));
    let topology = declare(queue, queue_options).await;

    let spec = stage(&store, queue).await;
    let (lines, mut active) = mpsc::unbounded_channel();
    let mut replicas: Vec<ChildProcess> = (0..REPLICAS)
        .map(|index| spawn_replica(&schema, queue, index, lines.clone()))
        .collect();
    let relay = tokio::spawn(relay_every(
        store.clone(),
        spec,
        ORDERS,
        Duration::from_secs(120),
    ));

    let deadline = Instant::now() + Duration::from_secs(180);
    let mut killed = Vec::new();
    let mut takeovers = 0;
    let mut current = None;
    while effects(&store).await.0 < i64::from(ORDERS) {
        assert!(
            Instant::now() < deadline,
            "not drained: effects {:?}, killed {killed:?}",
            effects(&store).await
        );
        while let Ok(index) = active.try_recv() {
            takeovers += 1;
            current = Some(index);
        }
        let due = (killed.len() + 1) as i64 * i64::from(ORDERS) / (KILLS as i64 + 1);
        if killed.len() < KILLS && effects(&store).await.0 >= due {
            if let Some(index) = current.take() {
                replicas[index].kill().await.unwrap();
                killed.push(index);
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    relay.await.unwrap();
    for (index, replica) in replicas.iter_mut().enumerate() {
        if !killed.contains(&index) {
            replica.terminate().unwrap();
        }
        let exited = tokio::time::timeout(Duration::from_secs(20), replica.wait())
            .await
            .expect("a replica stops on SIGTERM")
            .unwrap();
        if !killed.contains(&index) {
            assert!(exited.success(), "replica {index}: {exited}");
        }
    }

    let (with_effect, rows) = effects(&store).await;
    let out_of_order = out_of_order(&store).await;
    drop_schema(store.pool(), &schema).await;
    topology.delete_queue(queue).await.unwrap();
    assert_eq!(
        (with_effect, rows),
        (i64::from(ORDERS), i64::from(ORDERS)),
        "(orders with an effect, effects): each exactly once"
    );
    assert!(out_of_order.is_empty(), "out of order: {out_of_order:?}");
    assert_eq!(killed.len(), KILLS, "active replicas killed: {killed:?}");
    assert!(takeovers > KILLS, "{takeovers} replicas became active");
    format!("{KILLS} active replicas killed, {takeovers} became active")
}

/// Stages the orders, each key's in id order.
async fn stage(store: &PgOutboxStore, queue: &'static str) -> &'static OutboxSpec<Order> {
    let spec: &'static OutboxSpec<Order> = Box::leak(Box::new(
        OutboxSpec::json("order-events")
            .destination(queue)
            .per_key(),
    ));
    stage_orders(store, spec, ORDERS, KEYS).await;
    spec
}

/// Starts consumer child `index`; its "active" line is sent to `lines`.
fn spawn_replica(
    schema: &str,
    queue: &str,
    index: usize,
    lines: mpsc::UnboundedSender<usize>,
) -> ChildProcess {
    let mut child = harnessless::spawn_self(CHILD_ENV, &format!("{schema} {queue}")).unwrap();
    let mut output = child.lines().unwrap();
    tokio::spawn(async move {
        while let Ok(Some(line)) = output.next_line().await {
            if line == ACTIVE {
                let _ = lines.send(index);
            }
        }
    });
    child
}

/// `(orders with an effect, effects)`.
async fn effects(store: &PgOutboxStore) -> (i64, i64) {
    let schema = store.options().get_schema();
    let sql = format!("select count(distinct order_id), count(*) from \"{schema}\".effects");
    sqlx::query_as(AssertSqlSafe(sql))
        .fetch_one(store.pool())
        .await
        .unwrap()
}

/// Each key's effects whose order id is not above the one committed before
/// it: `(key, earlier order, later order)`.
async fn out_of_order(store: &PgOutboxStore) -> Vec<(i32, i32, i32)> {
    let schema = store.options().get_schema();
    let sql = format!("select key, order_id from \"{schema}\".effects order by seq");
    let rows: Vec<(i32, i32)> = sqlx::query_as(AssertSqlSafe(sql))
        .fetch_all(store.pool())
        .await
        .unwrap();
    let mut last: HashMap<i32, i32> = HashMap::new();
    let mut wrong = Vec::new();
    for (key, order) in rows {
        if let Some(before) = last.insert(key, order) {
            if before >= order {
                wrong.push((key, before, order));
            }
        }
    }
    wrong
}

/// A child: one consumer replica until it is terminated.
async fn child(config: &str) {
    let child = ChildSetup::new(config, PREFETCH).await;
    let schema = child.schema;
    let sql = format!("insert into \"{schema}\".effects (order_id, key) values ($1, $2)");
    let told = std::sync::Once::new();
    let told: &'static std::sync::Once = Box::leak(Box::new(told));
    let handler = handler_fn(
        move |msg: Message<Order>, tx: TxHandle<PgContext<'static>>| {
            let sql = sql.clone();
            async move {
                told.call_once(|| harnessless::tell_parent(ACTIVE));
                let mut ctx = tx.lock().await;
                sqlx::query(AssertSqlSafe(sql))
                    .bind(i64::from(msg.payload.id))
                    .bind(i64::from(msg.payload.id % KEYS))
                    .execute(ctx.tx())
                    .await?;
                Ok::<(), HandlerError>(())
            }
        },
    );
    let options = options()
        .concurrency(CONCURRENCY)
        .key_order(KeyOrder::Strict);
    child.consume(handler, options).await;
}
