//! What each `KeyOrder` promises on a real RabbitMQ queue with the
//! PostgreSQL inbox, with about 1% of events failing transiently more
//! often than `attempts`.

mod support;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::sync::{Arc, Mutex};

use sqlx::AssertSqlSafe;
use support::postgres_rabbitmq::{Order, World, options, run_until};
use tidings_consumer::{
    Consumer, ConsumerOptions, ConsumerReport, HandlerError, KeyOrder, TxHandle, handler_fn,
};
use tidings_core::Message;
use tidings_postgres::PgContext;
use tidings_rabbitmq::QueueKind;

const EVENTS: i32 = 2_000;
/// Few enough that the next event of a key is usually prefetched while
/// one of its events fails.
const KEYS: i32 = 16;
/// Times each failing event fails before it succeeds: more than
/// `ATTEMPTS`, so without a strict order it is nacked.
const FAILS: u32 = 3;
const ATTEMPTS: u32 = 2;
const PREFETCH: u16 = 64;

/// About 1% of the events, spread over the keys.
fn failing(id: i32) -> bool {
    (u64::from(id.unsigned_abs()).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) % 100 == 0
}

struct Outcome {
    report: ConsumerReport,
    /// Each key's ids in the order their effects committed.
    logs: HashMap<String, Vec<i32>>,
    failing: HashSet<i32>,
    failures: u32,
}

impl Outcome {
    fn assert_every_event_once(&self) {
        let mut seen: Vec<i32> = self.logs.values().flatten().copied().collect();
        seen.sort_unstable();
        let all: Vec<i32> = (0..EVENTS).collect();
        assert!(seen == all, "an event lost or doubled: {:?}", self.report);
        assert_eq!(self.report.parked, 0, "{:?}", self.report);
        assert_eq!(
            self.failures,
            FAILS * self.failing.len() as u32,
            "every failing event failed {FAILS} times"
        );
    }

    /// Ids whose effect committed after that of a later event of their key.
    fn out_of_order(&self) -> Vec<i32> {
        let mut late = Vec::new();
        for ids in self.logs.values() {
            let mut newest = -1;
            for &id in ids {
                if id < newest {
                    late.push(id);
                } else {
                    newest = id;
                }
            }
        }
        late.sort_unstable();
        late
    }
}

/// Publishes the events in id order, each under its key, and consumes
/// them until every effect committed. The handler appends the event to a
/// commit log in its transaction; a key's events run one at a time, so the
/// log's sequence is the key's commit order. A failing event writes first
/// and then fails, so its attempt's rollback is checked too.
async fn run(options: ConsumerOptions) -> Outcome {
    let world = World::new(QueueKind::Quorum).await;
    let log = world.table("commit_log");
    world
        .execute(format!(
            "create table {log} (seq bigserial primary key, key text not null, \
             order_id int not null)"
        ))
        .await;
    for id in 0..EVENTS {
        let mut envelope = world.envelope(id);
        envelope.ordering_key = Some(format!("k{}", id % KEYS));
        world.publish(&envelope).await;
    }
    let failing: HashSet<i32> = (0..EVENTS).filter(|id| failing(*id)).collect();
    assert!((10..=40).contains(&failing.len()), "{}", failing.len());
    let tries: Arc<Mutex<HashMap<i32, u32>>> = Arc::default();
    let failures = Arc::new(AtomicU32::new(0));
    let insert = format!("insert into {log} (key, order_id) values ($1, $2)");
    let handler = handler_fn({
        let (failing, tries, failures) = (failing.clone(), tries.clone(), failures.clone());
        move |msg: Message<Order>, tx: TxHandle<PgContext<'static>>| {
            let id = msg.payload.id;
            let tried = {
                let mut tries = tries.lock().unwrap();
                let n = tries.entry(id).or_default();
                *n += 1;
                *n
            };
            let fail = failing.contains(&id) && tried <= FAILS;
            let (insert, failures) = (insert.clone(), failures.clone());
            async move {
                let mut ctx = tx.lock().await;
                sqlx::query(AssertSqlSafe(insert))
                    .bind(msg.ordering_key().unwrap_or_default())
                    .bind(id)
                    .execute(ctx.tx())
                    .await?;
                if fail {
                    failures.fetch_add(1, SeqCst);
                    return Err(HandlerError::transient("a downstream hiccup"));
                }
                Ok(())
            }
        }
    });
    let consumer = Consumer::new(world.source_with_prefetch(PREFETCH), world.queue, handler)
        .unwrap()
        .inbox(world.inbox())
        .options(options.attempts(ATTEMPTS));
    let count = format!("select count(*) from {log}");
    let report = run_until(consumer, |_| async {
        let committed: i64 = sqlx::query_scalar(AssertSqlSafe(count.clone()))
            .fetch_one(world.store.pool())
            .await
            .unwrap();
        committed >= i64::from(EVENTS)
    })
    .await;
    let rows: Vec<(String, i32)> = sqlx::query_as(AssertSqlSafe(format!(
        "select key, order_id from {log} order by seq"
    )))
    .fetch_all(world.store.pool())
    .await
    .unwrap();
    let mut logs: HashMap<String, Vec<i32>> = HashMap::new();
    for (key, id) in rows {
        logs.entry(key).or_default().push(id);
    }
    world.drop().await;
    Outcome {
        report,
        logs,
        failing,
        failures: failures.load(SeqCst),
    }
}

async fn strict_keeps_every_key_in_order(max_batch: usize) {
    let options = options()
        .key_order(KeyOrder::Strict)
        .concurrency(4)
        .max_batch(max_batch);
    let outcome = run(options).await;
    outcome.assert_every_event_once();
    assert_eq!(
        outcome.out_of_order(),
        Vec::<i32>::new(),
        "effects committed out of order: {:?}",
        outcome.report
    );
    assert_eq!(outcome.report.failed, 0, "a delivery was nacked past");
}

async fn serial_reorders_only_what_it_nacked(max_batch: usize) {
    let options = options()
        .key_order(KeyOrder::Serial)
        .concurrency(4)
        .max_batch(max_batch);
    let outcome = run(options).await;
    outcome.assert_every_event_once();
    assert!(outcome.report.failed > 0, "nothing was nacked");
    let unexpected: Vec<_> = outcome
        .out_of_order()
        .into_iter()
        .filter(|id| !outcome.failing.contains(id))
        .collect();
    assert!(
        unexpected.is_empty(),
        "events that never failed committed late: {unexpected:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strict_order_commits_each_key_in_order_one_at_a_time() {
    strict_keeps_every_key_in_order(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strict_order_commits_each_key_in_order_in_batches() {
    strict_keeps_every_key_in_order(16).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serial_order_reorders_only_nacked_events_one_at_a_time() {
    serial_reorders_only_what_it_nacked(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serial_order_reorders_only_nacked_events_in_batches() {
    serial_reorders_only_what_it_nacked(16).await;
}
