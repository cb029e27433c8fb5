//! A consumer with the PostgreSQL inbox whose handler parks one order
//! while broken and counts the effect of every other in a table.

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tidings_admin::tidings_postgres::sqlx::{self, AssertSqlSafe};
use tidings_admin::tidings_postgres::{PgContext, PgOutboxStore};
use tidings_consumer::{Consumer, ConsumerOptions, HandlerError, TxHandle, handler_fn};
use tidings_core::{Backoff, Envelope, Message, QueueSpec, REPLAYED_REASON_HEADER, Source};
use tidings_testing::consumer::{Order, order_to};
use tokio_util::sync::CancellationToken;

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
pub(crate) async fn handle_replay_once<S: Source>(
    store: &PgOutboxStore,
    queue: &'static str,
    source: S,
) {
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

/// A fresh PostgreSQL store with the effects table.
pub(crate) async fn effects_store() -> PgOutboxStore {
    let store = super::pg_store().await;
    create_effects(&store).await;
    store
}

/// Creates the effects table in the store's schema.
async fn create_effects(store: &PgOutboxStore) {
    let sql = format!(
        "create table \"{}\".effects (order_id int primary key, times int not null)",
        store.options().get_schema()
    );
    sqlx::query(AssertSqlSafe(sql))
        .execute(store.pool())
        .await
        .unwrap();
}

/// `(orders with an effect, the most effects one order had)`.
pub(crate) async fn effects(store: &PgOutboxStore) -> (i64, i32) {
    let sql = format!(
        "select count(*), coalesce(max(times), 0) from \"{}\".effects",
        store.options().get_schema()
    );
    sqlx::query_as(AssertSqlSafe(sql))
        .fetch_one(store.pool())
        .await
        .unwrap()
}

/// Runs a consumer of `queue` on `source` with the PostgreSQL inbox of
/// `store` until `done` holds of what its handler saw and the duplicates
/// skipped, for at most 30 s. The handler parks [`POISON`] while
/// `broken`.
pub(crate) async fn consume<S: Source>(
    store: &PgOutboxStore,
    queue: &'static str,
    source: S,
    broken: bool,
    done: impl Fn(&[Seen], u64) -> bool,
) -> Vec<Seen> {
    let spec: &'static QueueSpec<Order> = Box::leak(Box::new(QueueSpec::json(queue)));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let broken = Arc::new(AtomicBool::new(broken));
    let sql = Arc::new(format!(
        "insert into \"{}\".effects (order_id, times) values ($1, 1) \
         on conflict (order_id) do update set times = effects.times + 1",
        store.options().get_schema()
    ));
    let handler = handler_fn({
        let seen = seen.clone();
        move |msg: Message<Order>, tx: TxHandle<PgContext<'static>>| {
            let (seen, broken, sql) = (seen.clone(), broken.clone(), sql.clone());
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
                sqlx::query(AssertSqlSafe(sql.to_string()))
                    .bind(i64::from(msg.payload.id))
                    .execute(ctx.tx())
                    .await?;
                Ok(())
            }
        }
    });
    let quick = Backoff::new(Duration::from_millis(20), Duration::from_millis(200));
    let inbox = tidings_inbox::Inbox::new(store.inbox(), "billing").unwrap();
    let consumer = Arc::new(
        Consumer::new(source, spec, handler)
            .unwrap()
            .inbox(inbox)
            .options(
                ConsumerOptions::default()
                    .retry_backoff(quick)
                    .restart_backoff(quick),
            ),
    );
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (consumer, cancel) = (consumer.clone(), cancel.clone());
        async move { consumer.run(cancel).await }
    });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let finished = done(&seen.lock().unwrap(), consumer.report().duplicates);
        if finished || tokio::time::Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Time for a stray second delivery to show up.
    tokio::time::sleep(Duration::from_millis(500)).await;
    cancel.cancel();
    task.await.unwrap();
    seen.lock().unwrap().clone()
}
