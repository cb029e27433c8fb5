//! A consumer with the PostgreSQL inbox whose handler parks one order
//! while broken and counts the effect of every other in a table.

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tidings_admin::tidings_postgres::{PgContext, PgOutboxStore};
use tidings_consumer::{Consumer, ConsumerOptions, HandlerError, TxHandle, handler_fn};
use tidings_core::{Backoff, Envelope, Message, QueueSpec, REPLAYED_REASON_HEADER, Source};
use tidings_testing::consumer::{Effects, Order, PgEffects, order_to, run_for};

/// The order a broken handler parks.
pub(crate) const POISON: u32 = 7;

/// What the handler saw of one delivery: order, replay reason, delivery
/// count.
pub(crate) type Seen = (u32, Option<String>, Option<u32>);

/// The one delivery of [`POISON`] among `seen`, checked to carry the
/// replay's `reason`.
pub(crate) fn replayed_once<'a>(seen: &'a [Seen], reason: &str) -> &'a Seen {
    let replayed: Vec<_> = seen.iter().filter(|s| s.0 == POISON).collect();
    assert_eq!(replayed.len(), 1, "{seen:?}");
    let why = replayed[0].1.as_deref().unwrap_or_default();
    assert!(why.contains(reason), "{seen:?}");
    replayed[0]
}

/// Runs the fixed handler on `queue` until order 7, replayed, and a
/// duplicate are seen; checks order 8 (whose stale copy was replayed too)
/// took effect once, and order 7 once, with its reason and a delivery
/// count started afresh.
pub(crate) async fn handle_replay_once<S: Source>(store: &Billing, queue: &'static str, source: S) {
    let seen = consume(store, queue, source, false, |seen, duplicates| {
        seen.iter().any(|s| s.0 == POISON) && duplicates >= 1
    })
    .await;
    assert_eq!(
        effects(store).await,
        (2, 1),
        "order 8 handled twice or 7 not at all"
    );
    let replayed = replayed_once(&seen, "negative total");
    assert_eq!(replayed.2, Some(1), "the delivery count was not reset");
}

/// An order event for `queue`.
pub(crate) fn envelope(queue: &str, id: u32) -> Envelope {
    order_to(queue, id, None)
}

/// A PostgreSQL store in a fresh schema with the effects table the
/// billing consumer's handler writes.
pub(crate) struct Billing {
    pub(crate) store: PgOutboxStore,
    effects: PgEffects,
}

impl Billing {
    /// Drops the schema, effects and all.
    pub(crate) async fn drop(self) {
        self.effects.drop_schema().await;
    }
}

/// A fresh store with the effects table.
pub(crate) async fn effects_store() -> Billing {
    let store = super::pg_store().await;
    let schema = store.options().get_schema().to_owned();
    let effects = PgEffects::create(store.pool().clone(), &schema).await;
    Billing { store, effects }
}

/// `(orders with an effect, the most effects one order had)`.
pub(crate) async fn effects(billing: &Billing) -> (u64, u64) {
    let Effects { orders, most } = billing.effects.effects().await;
    (orders, most)
}

/// Runs a consumer of `queue` on `source` with the PostgreSQL inbox of
/// `billing` until `done` holds of what its handler saw and the duplicates
/// skipped, for at most 30 s, and half a second more for a stray second
/// delivery to show up. The handler parks [`POISON`] while `broken`.
pub(crate) async fn consume<S: Source>(
    billing: &Billing,
    queue: &'static str,
    source: S,
    broken: bool,
    done: impl Fn(&[Seen], u64) -> bool,
) -> Vec<Seen> {
    let spec: &'static QueueSpec<Order> = Box::leak(Box::new(QueueSpec::json(queue)));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let broken = Arc::new(AtomicBool::new(broken));
    let handler = handler_fn({
        let (seen, effects) = (seen.clone(), billing.effects.clone());
        move |msg: Message<Order>, tx: TxHandle<PgContext<'static>>| {
            let (seen, broken, effects) = (seen.clone(), broken.clone(), effects.clone());
            async move {
                let reason = msg.headers().get(REPLAYED_REASON_HEADER).cloned();
                seen.lock()
                    .unwrap()
                    .push((msg.payload.id, reason, msg.delivery_count));
                if msg.payload.id == POISON && broken.load(SeqCst) {
                    return Err(HandlerError::permanent(
                        "poison: order 7 has a negative total",
                    ));
                }
                let mut ctx = tx.lock().await;
                effects.apply(msg.payload.id).execute(ctx.tx()).await?;
                Ok(())
            }
        }
    });
    let quick = Backoff::new(Duration::from_millis(20), Duration::from_millis(200));
    let inbox = tidings_inbox::Inbox::new(billing.store.inbox(), "billing").unwrap();
    let options = ConsumerOptions::default()
        .retry_backoff(quick)
        .restart_backoff(quick);
    let consumer = Consumer::new(source, spec, handler)
        .unwrap()
        .inbox(inbox)
        .options(options);
    run_for(consumer, Duration::from_secs(30), |report| {
        let finished = done(&seen.lock().unwrap(), report.duplicates);
        async move {
            if finished {
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            finished
        }
    })
    .await;
    seen.lock().unwrap().clone()
}
