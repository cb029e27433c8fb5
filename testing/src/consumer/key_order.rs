//! What each `KeyOrder` promises when about 1% of events fail transiently
//! more often than `attempts`.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::sync::{Arc, Mutex};

use tidings_consumer::{ConsumerReport, HandlerError, KeyOrder, TxHandle, handler_fn};
use tidings_core::Message;

use super::world::{ConsumerWorld, Effects, Order, WorldTx, consumer, options, order, run_until};

const EVENTS: u32 = 2_000;
/// Few enough that the next event of a key is usually prefetched while
/// one of its events fails.
const KEYS: u32 = 16;
/// Times each failing event fails before it succeeds: more than
/// `ATTEMPTS`, so without a strict order it is nacked.
const FAILS: u32 = 3;
const ATTEMPTS: u32 = 2;

/// About 1% of the events, spread over the keys.
fn failing(id: u32) -> bool {
    (u64::from(id).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) % 100 == 0
}

/// What a run saw: each key's ids in the order their handlers succeeded
/// (a key's events run one at a time, so this is its commit order), the
/// failing events and how often they failed.
struct Outcome {
    report: ConsumerReport,
    effects: Effects,
    logs: HashMap<String, Vec<u32>>,
    failing: HashSet<u32>,
    failures: u32,
}

impl Outcome {
    fn assert_every_event_once(&self) {
        let mut seen: Vec<u32> = self.logs.values().flatten().copied().collect();
        seen.sort_unstable();
        assert!(
            seen == (0..EVENTS).collect::<Vec<_>>(),
            "an event lost or doubled: {:?}",
            self.report
        );
        let effects = Effects {
            orders: EVENTS.into(),
            most: 1,
        };
        assert_eq!(self.effects, effects, "a failed try left its write");
        assert_eq!(self.report.parked, 0, "{:?}", self.report);
        let expected = FAILS * self.failing.len() as u32;
        assert_eq!(
            self.failures, expected,
            "every failing event failed {FAILS} times"
        );
    }

    /// Ids whose effect committed after that of a later event of their key.
    fn out_of_order(&self) -> Vec<u32> {
        let mut late = Vec::new();
        for ids in self.logs.values() {
            let mut newest = None;
            for &id in ids {
                match newest {
                    Some(n) if id < n => late.push(id),
                    _ => newest = Some(id),
                }
            }
        }
        late.sort_unstable();
        late
    }
}

/// What the handlers of a run share: the failing events, the tries of
/// each event, each key's ids as their handlers succeeded, and the
/// failures so far.
struct Handled {
    failing: HashSet<u32>,
    tries: Mutex<HashMap<u32, u32>>,
    logs: Mutex<HashMap<String, Vec<u32>>>,
    failures: AtomicU32,
}

impl Handled {
    fn new(failing: HashSet<u32>) -> Self {
        Self {
            failing,
            tries: Mutex::default(),
            logs: Mutex::default(),
            failures: AtomicU32::new(0),
        }
    }

    /// Counts a try of `id`; fails it while it is a failing event tried
    /// no more than [`FAILS`] times.
    fn try_once(&self, id: u32) -> Result<(), HandlerError> {
        let tried = {
            let mut tries = self.tries.lock().expect("tries");
            let n = tries.entry(id).or_default();
            *n += 1;
            *n
        };
        if self.failing.contains(&id) && tried <= FAILS {
            self.failures.fetch_add(1, SeqCst);
            return Err(HandlerError::transient("a downstream hiccup"));
        }
        Ok(())
    }

    /// Notes that `id` of `key` succeeded, once.
    fn log(&self, key: &str, id: u32) {
        let mut logs = self.logs.lock().expect("logs");
        let log = logs.entry(key.to_owned()).or_default();
        if !log.contains(&id) {
            log.push(id);
        }
    }
}

/// Publishes the events in id order, each under its key, and consumes them
/// until every one succeeded. A failing event writes its effect first and
/// then fails, so its rollback is checked too.
async fn run<W: ConsumerWorld>(world: &Arc<W>, key_order: KeyOrder, max_batch: usize) -> Outcome {
    let options = options()
        .key_order(key_order)
        .concurrency(4)
        .max_batch(max_batch);
    for id in 0..EVENTS {
        let key = format!("k{}", id % KEYS);
        world.publish(&order(world.as_ref(), id, Some(&key))).await;
    }
    let handled = Arc::new(Handled::new(
        (0..EVENTS).filter(|id| failing(*id)).collect(),
    ));
    assert!(
        (10..=40).contains(&handled.failing.len()),
        "{}",
        handled.failing.len()
    );
    let handler = handler_fn({
        let (world, handled) = (world.clone(), handled.clone());
        move |msg: Message<Order>, tx: TxHandle<WorldTx<W>>| {
            let (world, handled) = (world.clone(), handled.clone());
            async move {
                let id = msg.payload.id;
                world.apply(&tx, id).await?;
                // Counted once the write went in, so a try a store's write
                // conflict ended does not use up a planned failure.
                handled.try_once(id)?;
                handled.log(msg.ordering_key().unwrap_or_default(), id);
                Ok(())
            }
        }
    });
    let consumer = consumer(world.as_ref(), handler, options.attempts(ATTEMPTS));
    let report = run_until::<W, _, _, _>(consumer, |report| async move {
        report.processed >= u64::from(EVENTS)
    })
    .await;
    Outcome {
        report,
        effects: world.effects().await,
        logs: std::mem::take(&mut *handled.logs.lock().expect("logs")),
        failing: handled.failing.clone(),
        failures: handled.failures.load(SeqCst),
    }
}

async fn strict_keeps_every_key_in_order<W: ConsumerWorld>(world: &Arc<W>, max_batch: usize) {
    let outcome = run(world, KeyOrder::Strict, max_batch).await;
    outcome.assert_every_event_once();
    assert_eq!(
        outcome.out_of_order(),
        Vec::<u32>::new(),
        "{:?}",
        outcome.report
    );
    assert_eq!(outcome.report.failed, 0, "a delivery was nacked past");
}

async fn serial_reorders_only_what_it_nacked<W: ConsumerWorld>(world: &Arc<W>, max_batch: usize) {
    let outcome = run(world, KeyOrder::Serial, max_batch).await;
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

/// `KeyOrder::Strict` retries a failing delivery in place, holding its key,
/// so every key commits in publish order and nothing is nacked.
pub async fn strict_order_commits_each_key_in_order_one_at_a_time<W: ConsumerWorld>(
    world: &Arc<W>,
) {
    strict_keeps_every_key_in_order(world, 1).await;
}

/// As [`strict_order_commits_each_key_in_order_one_at_a_time`], with
/// batches of up to 16 deliveries per transaction.
pub async fn strict_order_commits_each_key_in_order_in_batches<W: ConsumerWorld>(world: &Arc<W>) {
    strict_keeps_every_key_in_order(world, 16).await;
}

/// `KeyOrder::Serial` nacks a delivery that keeps failing; only such
/// deliveries may commit after later events of their key.
pub async fn serial_order_reorders_only_nacked_events_one_at_a_time<W: ConsumerWorld>(
    world: &Arc<W>,
) {
    serial_reorders_only_what_it_nacked(world, 1).await;
}

/// As [`serial_order_reorders_only_nacked_events_one_at_a_time`], with
/// batches of up to 16 deliveries per transaction.
pub async fn serial_order_reorders_only_nacked_events_in_batches<W: ConsumerWorld>(world: &Arc<W>) {
    serial_reorders_only_what_it_nacked(world, 16).await;
}
