//! stored-outage: messages published at a steady rate (500/s) for the
//! whole run while the handler fails with a transient error for a stretch
//! in the middle (30 s), once with today's inbox and once with the stored
//! inbox, each on a queue and stores of its own. Counts the broker's
//! redeliveries (deliveries whose count the source reads past one),
//! parked messages and handler runs, and times the drain after recovery:
//! from the handler's recovery until every message published before it
//! has its effect committed. Both consumers keep the consume scenario's
//! handler, inbox and options (defaults, concurrency 8, prefetch 128).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use sqlx::AssertSqlSafe;
use tidings_consumer::{Consumer, ConsumerOptions, ConsumerReport};
use tidings_core::QueueSpec;
use tidings_inbox::Inbox;
use tidings_postgres::{PgOutboxStore, Retention};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::consuming::{CONSUMER, Gate, create_invoices, invoice_handler};
use crate::counting::{Count, Seen};
use crate::env::{Env, table_in};
use crate::payload::{Payload, envelopes};
use crate::raw_publish::RawPublisher;
use crate::report::{Figure, Goal, Report};
use crate::sizes::Sizes;
use crate::stored_consuming::{StoredRun, counting_source, kept_store, stored_consumer};

const NAME: &str = "stored-outage";
/// How often the publisher sends a window of messages.
const TICK: Duration = Duration::from_millis(20);
/// How often the committed effects are counted.
const POLL: Duration = Duration::from_millis(50);
/// How long the backlog may take to drain after recovery before the run
/// gives up on it.
const DRAIN_LIMIT: Duration = Duration::from_secs(300);

pub(super) async fn run(env: &Env, sizes: &Sizes, report: Report<'_>) -> anyhow::Result<()> {
    let mut outcomes = Vec::new();
    for side in [Side::Today, Side::Stored] {
        let outcome = side.run(env, sizes).await?;
        outcome.report(side, &mut *report);
        outcomes.push(outcome);
    }
    let (today, stored) = (&outcomes[0], &outcomes[1]);
    if let (Some(t), Some(s)) = (today.drain, stored.drain) {
        let measure = "stored inbox, drain after recovery vs today's inbox";
        report(Figure::millis(NAME, measure, s).limit(t.as_secs_f64() * 1e3));
    }
    Ok(())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Today,
    Stored,
}

/// What one side's run counted.
#[derive(Debug)]
struct Outcome {
    published: usize,
    seen: Seen,
    consumer: ConsumerReport,
    handler_runs: u64,
    /// Messages published before recovery whose effect was not committed
    /// at recovery.
    backlog: usize,
    /// From recovery until every message published before it had its
    /// effect committed or was parked; `None` when that took longer than `DRAIN_LIMIT`.
    drain: Option<Duration>,
    effects: usize,
    distinct: usize,
}

impl Side {
    fn label(self) -> &'static str {
        match self {
            Side::Today => "today's inbox",
            Side::Stored => "stored inbox",
        }
    }

    async fn run(self, env: &Env, sizes: &Sizes) -> anyhow::Result<Outcome> {
        let store = env.store("outage", Retention::Delete).await?;
        let kept = kept_store(env, "outage_kept").await?;
        let queue = env.queue("bench-stored-outage").await?;
        let result = async {
            create_invoices(&store).await?;
            self.measure(env, sizes, &store, &kept, queue).await
        }
        .await;
        env.remove([&store, &kept], [queue]).await?;
        result
    }

    async fn measure(
        self,
        env: &Env,
        sizes: &Sizes,
        store: &PgOutboxStore,
        kept: &PgOutboxStore,
        queue: &'static str,
    ) -> anyhow::Result<Outcome> {
        let outage = sizes.outage_duration;
        let lead = (outage / 3).max(Duration::from_secs(2));
        let total = lead + outage + lead;
        let per_tick = (sizes.outage_rate as f64 * TICK.as_secs_f64()).max(1.0) as usize;
        let ticks = (total.as_secs_f64() / TICK.as_secs_f64()).ceil() as usize;
        let messages = envelopes(queue, per_tick * ticks)?;
        let gate = Gate::default();
        let source = counting_source(env.amqp("tidings-bench-consumer"));
        let counts = source.counts();
        let cancel = CancellationToken::new();
        let running = match self {
            Side::Today => {
                let spec: &'static QueueSpec<Payload> = Box::leak(Box::new(QueueSpec::json(queue)));
                let consumer = Consumer::new(source, spec, invoice_handler(store, &gate))?
                    .inbox(Inbox::new(store.inbox(), CONSUMER)?)
                    .options(ConsumerOptions::default().concurrency(sizes.clients));
                Running::spawn_today(Arc::new(consumer), &cancel)
            }
            Side::Stored => {
                let consumer =
                    stored_consumer(store, kept, source, queue, sizes.clients, &gate, None)?;
                Running::spawn_stored(Arc::new(consumer), &cancel)
            }
        };
        let published = Arc::new(AtomicUsize::new(0));
        let publishing = tokio::spawn(publish_steadily(
            RawPublisher::connect(&env.amqp_url).await?,
            messages,
            per_tick,
            published.clone(),
        ));
        tokio::time::sleep(lead).await;
        gate.fail(true);
        tokio::time::sleep(outage).await;
        gate.fail(false);
        let recovered = Instant::now();
        let before = published.load(Relaxed);
        let backlog = before - committed_below(store, before).await?;
        let drain = settled(store, &*running.report, before, recovered).await?;
        let sent = publishing.await??;
        settled(store, &*running.report, sent, Instant::now()).await?;
        cancel.cancel();
        running.task.await??;
        let (effects, distinct) = effects(store).await?;
        Ok(Outcome {
            published: sent,
            seen: counts.seen(),
            consumer: (running.report)(),
            handler_runs: gate.calls(),
            backlog,
            drain,
            effects,
            distinct,
        })
    }
}

/// A consumer running in a task, whatever its kind.
struct Running {
    task: JoinHandle<anyhow::Result<()>>,
    report: Box<dyn Fn() -> ConsumerReport + Send + Sync>,
}

impl Running {
    fn spawn_today<C>(consumer: Arc<C>, cancel: &CancellationToken) -> Self
    where
        C: TodayRun,
    {
        let task = tokio::spawn({
            let (consumer, cancel) = (consumer.clone(), cancel.clone());
            async move {
                consumer.run_today(cancel).await;
                Ok(())
            }
        });
        Self {
            task,
            report: Box::new(move || consumer.counts()),
        }
    }

    fn spawn_stored<C: StoredRun>(consumer: Arc<C>, cancel: &CancellationToken) -> Self {
        let task = tokio::spawn({
            let (consumer, cancel) = (consumer.clone(), cancel.clone());
            async move { consumer.run_until(cancel).await }
        });
        Self {
            task,
            report: Box::new(move || consumer.counts()),
        }
    }
}

/// Today's consumer, whatever its source and handler types.
trait TodayRun: Send + Sync + 'static {
    fn run_today(&self, cancel: CancellationToken) -> impl Future<Output = ()> + Send;
    fn counts(&self) -> ConsumerReport;
}

impl<S, T, C, H, I> TodayRun for Consumer<S, T, C, H, I>
where
    S: tidings_core::Source,
    T: Send + 'static,
    C: tidings_core::Codec<T> + 'static,
    I: tidings_core::InboxAttempts,
    H: tidings_consumer::Handler<T, I::Tx>,
    Self: Send + Sync,
{
    async fn run_today(&self, cancel: CancellationToken) {
        self.run(cancel).await;
    }

    fn counts(&self) -> ConsumerReport {
        self.report()
    }
}

/// Publishes `messages` `per_tick` every [`TICK`], counting them in
/// `published` once confirmed; returns how many it published.
async fn publish_steadily(
    publisher: RawPublisher,
    messages: Vec<tidings_core::Envelope>,
    per_tick: usize,
    published: Arc<AtomicUsize>,
) -> anyhow::Result<usize> {
    let started = tokio::time::Instant::now();
    for (n, window) in messages.chunks(per_tick).enumerate() {
        tokio::time::sleep_until(started + TICK * n as u32).await;
        publisher.publish_all(window, per_tick).await?;
        published.fetch_add(window.len(), Relaxed);
    }
    Ok(messages.len())
}

/// Effects committed for the first `count` messages published.
async fn committed_below(store: &PgOutboxStore, count: usize) -> anyhow::Result<usize> {
    let sql = format!(
        "select count(distinct order_id) from {} where order_id < $1",
        table_in(store, "invoices")
    );
    let n: i64 = sqlx::query_scalar(AssertSqlSafe(sql))
        .bind(count as i64)
        .fetch_one(store.pool())
        .await?;
    Ok(n as usize)
}

/// Waits until each of the first `count` messages published has its
/// effect committed or was parked; returns how long after `since` that
/// was, or `None` past `DRAIN_LIMIT`.
async fn settled(
    store: &PgOutboxStore,
    report: &(dyn Fn() -> ConsumerReport + Send + Sync),
    count: usize,
    since: Instant,
) -> anyhow::Result<Option<Duration>> {
    while since.elapsed() < DRAIN_LIMIT {
        let parked = report().parked as usize;
        if committed_below(store, count).await? + parked >= count {
            return Ok(Some(since.elapsed()));
        }
        tokio::time::sleep(POLL).await;
    }
    Ok(None)
}

/// The invoice rows, and the messages they are for.
async fn effects(store: &PgOutboxStore) -> anyhow::Result<(usize, usize)> {
    let sql = format!(
        "select count(*), count(distinct order_id) from {}",
        table_in(store, "invoices")
    );
    let (all, distinct): (i64, i64) = sqlx::query_as(AssertSqlSafe(sql))
        .fetch_one(store.pool())
        .await?;
    Ok((all as usize, distinct as usize))
}

impl Outcome {
    fn report(&self, side: Side, report: Report<'_>) {
        let label = side.label();
        let zero = |f: Figure| match side {
            Side::Stored => f.goal(Goal::Equal(0.0)),
            Side::Today => f,
        };
        let count = |measure: &str, n: usize| {
            Figure::new(NAME, &format!("{label}, {measure}"), n as f64, "")
        };
        report(count("messages published", self.published));
        report(zero(count(
            "broker redeliveries",
            self.seen[Count::Redelivered] as usize,
        )));
        report(zero(count("parked", self.consumer.parked as usize)));
        report(count(
            "nacked to the broker",
            self.seen[Count::Nacked] as usize,
        ));
        let runs = self.handler_runs as f64 / self.published.max(1) as f64;
        report(Figure::new(
            NAME,
            &format!("{label}, handler runs per message"),
            runs,
            "share",
        ));
        report(count("backlog at recovery", self.backlog));
        match self.drain {
            Some(drain) => report(Figure::millis(
                NAME,
                &format!("{label}, drain after recovery"),
                drain,
            )),
            None => report(count("drain after recovery: not drained within 300 s", 0)),
        }
        let lost = self.published - self.distinct;
        report(zero(count("effects missing", lost)));
        report(zero(count("effects doubled", self.effects - self.distinct)));
    }
}
