//! scale-out: one route's backlog drained to RabbitMQ by 1, 2 and 4 relay
//! processes (children of this program, see `children`), once unordered
//! and once in order per key over [`KEYS`] keys; each count's throughput
//! against one process's, measured in the same run. Then the takeover:
//! two relays, one killed (SIGKILL) at a moment it holds claimed rows, and
//! the time until the other has published them (`takeover`).
//!
//! The relays run as a service would, with the default options: locked
//! claims of 1,000 rows, published in windows of 1,000 with confirms. The
//! backlog is staged in one transaction once every relay is ready; the
//! clock runs from its commit until the queue holds every event. Every
//! round then reads the queue back: no staged event may be missing, and
//! the rounds without a kill must have published each exactly once.

mod children;
mod received;
mod takeover;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use anyhow::bail;
use sqlx::AssertSqlSafe;
use tidings_core::OutboxSpec;
use tidings_postgres::{PgOutboxStore, Retention};
use tidings_testing::faults::ChildProcess;
use tidings_testing::names::unique_name;
use uuid::Uuid;

use crate::env::{Env, outbox_table};
use crate::payload::Payload;
use crate::report::{Figure, Goal, Report};
use crate::sizes::Sizes;

use super::chaos::child_command;
use children::Ordering;
use received::{QueueDepth, Received};
use takeover::Takeover;

pub(crate) use children::run_child;

const NAME: &str = "scale-out";
/// The relay processes of the rounds measured.
const COUNTS: [usize; 3] = [1, 2, 4];
/// Ordering keys of the per-key rounds.
const KEYS: usize = 1_000;
/// Relay processes of a takeover round, one of which is killed.
const TAKEOVER_RELAYS: usize = 2;
/// How long a round may take at most.
const DEADLINE: Duration = Duration::from_secs(600);

pub(super) async fn run(env: &Env, sizes: &Sizes, report: Report<'_>) -> anyhow::Result<()> {
    let events = sizes.scale_events;
    for ordering in [Ordering::Unordered, Ordering::PerKey] {
        let mut one = None;
        let mut received = Received::default();
        for relays in COUNTS {
            let round = round(env, events, ordering, relays, false).await?;
            let processes = if relays == 1 { "process" } else { "processes" };
            let measure = format!("{}, {relays} relay {processes}", ordering.name());
            let mut rate = Figure::rate(NAME, &measure, events, round.took);
            match one {
                None => one = Some(rate.value),
                Some(one) => rate = rate.limit(one),
            }
            report(rate);
            received.lost += round.received.lost;
            received.duplicates += round.received.duplicates;
        }
        let label = format!("{}, every count", ordering.name());
        report_received(report, &label, received, true);
        let round = round(env, events, ordering, TAKEOVER_RELAYS, true).await?;
        let label = format!("{}, {TAKEOVER_RELAYS} relays, one killed", ordering.name());
        if let Some(takeover) = round.takeover {
            report_takeover(report, &label, takeover);
        }
        report_received(report, &label, round.received, false);
    }
    Ok(())
}

fn report_takeover(report: Report<'_>, label: &str, takeover: Takeover) {
    report(Figure::new(
        NAME,
        &format!("{label}: rows it held"),
        takeover.held as f64,
        "",
    ));
    report(Figure::millis(
        NAME,
        &format!("{label}: its sessions ended after"),
        takeover.released,
    ));
    report(Figure::millis(
        NAME,
        &format!("{label}: its rows published by the survivor after"),
        takeover.published,
    ));
}

/// Lost events must be none; events published twice too, unless a relay
/// was killed after publishing some of its batch.
fn report_received(report: Report<'_>, label: &str, received: Received, exactly_once: bool) {
    let lost = Figure::new(NAME, &format!("{label}: lost"), received.lost as f64, "");
    report(lost.goal(Goal::Equal(0.0)));
    let twice = Figure::new(
        NAME,
        &format!("{label}: published twice"),
        received.duplicates as f64,
        "",
    );
    report(match exactly_once {
        true => twice.goal(Goal::Equal(0.0)),
        false => twice,
    });
}

/// One round's outcome.
struct Round {
    took: Duration,
    received: Received,
    takeover: Option<Takeover>,
}

/// Starts `relays` relay processes on a fresh route, stages `events` once
/// they are ready and times the drain; with `kill`, kills the first relay
/// once a quarter of the backlog is published.
async fn round(
    env: &Env,
    events: usize,
    ordering: Ordering,
    relays: usize,
    kill: bool,
) -> anyhow::Result<Round> {
    let store = env.store("scale", Retention::Delete).await?;
    let queue = env.queue("bench-scale").await?;
    let result = async {
        children::create_ready_table(&store).await?;
        let route = unique_name("scale-events");
        let spec = children::spec(&route, queue, ordering);
        let schema = store.options().get_schema().to_owned();
        let names: Vec<String> = (0..relays)
            .map(|i| format!("{}-{i}", unique_name("scale-relay")))
            .collect();
        let mut processes = Vec::new();
        for name in &names {
            let args = ["scale-relay", name, &schema, &route, queue, ordering.name()];
            processes.push(ChildProcess::spawn(child_command(&args)())?);
        }
        let depth = QueueDepth::open(&env.amqp_url, queue).await?;
        let drained = async {
            wait_for(|| children::ready(&store), |ready| ready >= relays).await?;
            let (victim, survivors) = processes.split_at_mut(1);
            if kill {
                takeover::pause(survivors)?;
            }
            let staged = stage(&store, &spec, events, ordering).await?;
            let started = Instant::now();
            let mut takeover = None;
            if kill {
                let killed = takeover::kill_and_time(&store, &mut victim[0], &names[0], survivors);
                takeover = Some(killed.await?);
            }
            // Every event is published once the queue holds as many
            // messages (a round without a kill publishes none twice).
            wait_for(|| depth.get(), |messages| messages >= events).await?;
            let took = started.elapsed();
            wait_for(|| pending(&store), |left| left == 0).await?;
            Ok::<_, anyhow::Error>((staged, took, takeover))
        }
        .await;
        depth.close().await;
        for process in &mut processes {
            process.stop(Duration::from_secs(10)).await?;
        }
        let (staged, took, takeover) = drained?;
        let received = received::read_back(&env.amqp_url, queue, &staged).await?;
        Ok(Round {
            took,
            received,
            takeover,
        })
    }
    .await;
    env.remove([&store], [queue]).await?;
    result
}

/// Stages `events` in one transaction, spread over [`KEYS`] keys on a
/// per-key route; returns their ids.
async fn stage(
    store: &PgOutboxStore,
    spec: &OutboxSpec<Payload>,
    events: usize,
    ordering: Ordering,
) -> anyhow::Result<HashSet<Uuid>> {
    let mut ids = HashSet::with_capacity(events);
    let mut ctx = store.begin().await?;
    for n in 0..events {
        let staged = ctx
            .outbox()
            .stage(spec, "order.placed", &Payload::new(n as i64))?;
        let staged = match ordering {
            Ordering::Unordered => staged,
            Ordering::PerKey => staged.ordering_key(format!("key-{}", n % KEYS)),
        };
        ids.insert(staged.envelope().event_id);
    }
    ctx.commit().await?;
    Ok(ids)
}

/// Rows left in the outbox: published rows are deleted.
async fn pending(store: &PgOutboxStore) -> anyhow::Result<usize> {
    let sql = format!("select count(*) from {}", outbox_table(store));
    let left: i64 = sqlx::query_scalar(AssertSqlSafe(sql))
        .fetch_one(store.pool())
        .await?;
    Ok(left as usize)
}

/// Reads `value` every 20 ms until `done` holds of it, for [`DEADLINE`]
/// at most.
async fn wait_for<F, Fut>(mut value: F, done: impl Fn(usize) -> bool) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<usize>>,
{
    let deadline = Instant::now() + DEADLINE;
    loop {
        let seen = value().await?;
        if done(seen) {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("still {seen} after {DEADLINE:?}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
