//! chaos: PostgreSQL → relay → RabbitMQ → consumer with the PostgreSQL
//! inbox, with the relay and the consumer each a child process of this
//! program, run once undisturbed and once killed (SIGKILL) and restarted
//! on a seeded schedule. The ledger of `tidings-testing` compares what was
//! staged with the effects the handler committed.
//!
//! Passes when nothing is lost and no event has its effect twice; the
//! throughput under kills is reported as a ratio to the calm run, with
//! the kills, the handler runs beyond one per event and any breach of
//! per-key order.

mod children;

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use sqlx::AssertSqlSafe;
use tidings_postgres::{PgOutboxStore, Retention};
use tidings_testing::faults::{ChildProcess, KillReport, KillSchedule, Killer};
use tidings_testing::ledger::{Ledger, LedgerReport};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::env::{Env, table_in};
use crate::payload::Payload;
use crate::report::{Figure, Goal, Report};
use crate::sizes::Sizes;

pub(crate) use children::run_child;

const NAME: &str = "chaos";
/// Ordering keys the events are spread over.
const KEYS: usize = 32;
/// Events staged per transaction.
const CHUNK: usize = 500;

/// One round's outcome.
struct Round {
    took: Duration,
    ledger: LedgerReport,
    handler_runs: u64,
    relay_kills: KillReport,
    consumer_kills: KillReport,
}

pub(super) async fn run(env: &Env, sizes: &Sizes, report: Report<'_>) -> anyhow::Result<()> {
    let events = sizes.chaos_events;
    let calm = round(env, events, None).await?;
    let rate = |round: &Round| events as f64 / round.took.as_secs_f64().max(1e-9);
    report(Figure::rate(NAME, "calm throughput", events, calm.took));
    let schedule = KillSchedule::new(sizes.chaos_kill_every / 2, sizes.chaos_kill_every * 2);
    let chaos = round(env, events, Some(schedule)).await?;
    report(
        Figure::rate(NAME, "throughput under kills", events, chaos.took)
            .limit(rate(&calm))
            .goal(Goal::RatioAtLeast(0.5)),
    );
    for (label, round) in [("calm", &calm), ("kills", &chaos)] {
        let ledger = &round.ledger;
        let count = |measure: &str, n: usize| {
            Figure::new(NAME, &format!("{label}: {measure}"), n as f64, "").goal(Goal::Equal(0.0))
        };
        report(count("lost", ledger.lost.len()));
        report(count("duplicated effects", ledger.duplicated.len()));
        report(Figure::new(
            NAME,
            &format!("{label}: per-key order breaches"),
            ledger.out_of_order.len() as f64,
            "",
        ));
        let extra = round.handler_runs.saturating_sub(events as u64);
        report(Figure::new(
            NAME,
            &format!("{label}: handler runs beyond one per event"),
            extra as f64,
            "",
        ));
    }
    report(Figure::new(
        NAME,
        "relay kills",
        chaos.relay_kills.kills.into(),
        "",
    ));
    report(Figure::new(
        NAME,
        "consumer kills",
        chaos.consumer_kills.kills.into(),
        "",
    ));
    for (label, round) in [("calm", &calm), ("kills", &chaos)] {
        if !round.ledger.lost.is_empty() || !round.ledger.duplicated.is_empty() {
            bail!("{label} round: {}", round.ledger);
        }
    }
    Ok(())
}

/// Stages `events`, runs the relay and consumer children until every
/// event has its effect (killing them on `schedule`, if any), and reads
/// the ledger.
async fn round(env: &Env, events: usize, schedule: Option<KillSchedule>) -> anyhow::Result<Round> {
    let store = env.store("chaos", Retention::Delete).await?;
    let queue = env.queue("bench-chaos").await?;
    let result = async {
        children::create_tables(&store).await?;
        let route = tidings_testing::names::unique_name("chaos-events");
        let mut ledger = Ledger::new();
        stage(&store, &route, queue, events, &mut ledger).await?;
        let schema = store.options().get_schema().to_owned();
        let mut relay = child_command(&["chaos-relay", &schema, &route, queue]);
        let mut consumer = child_command(&["chaos-consumer", &schema, queue]);

        let started = Instant::now();
        let done = CancellationToken::new();
        let watch = watch_effects(&store, events, done.clone());
        let (relay_kills, consumer_kills) = match schedule {
            Some(schedule) => {
                let relays =
                    Killer::new(relay, schedule.seed(1)).run_until(done.clone().cancelled_owned());
                let consumers = Killer::new(consumer, schedule.seed(2))
                    .run_until(done.clone().cancelled_owned());
                let (relays, consumers, watched) = tokio::join!(relays, consumers, watch);
                watched?;
                (relays?, consumers?)
            }
            None => {
                let mut relay = ChildProcess::spawn(relay())?;
                let mut consumer = ChildProcess::spawn(consumer())?;
                let watched = watch.await;
                consumer.stop(Duration::from_secs(10)).await?;
                relay.stop(Duration::from_secs(10)).await?;
                watched?;
                (KillReport::default(), KillReport::default())
            }
        };
        let took = started.elapsed();
        for id in effects(&store).await? {
            ledger.effect(id);
        }
        Ok(Round {
            took,
            ledger: ledger.report(),
            handler_runs: handler_runs(&store).await?,
            relay_kills,
            consumer_kills,
        })
    }
    .await;
    env.remove([&store], [queue]).await?;
    result
}

/// Stages `events` over [`KEYS`] keys with ids of its own, noting each in
/// the ledger in staging order.
async fn stage(
    store: &PgOutboxStore,
    route: &str,
    queue: &str,
    events: usize,
    ledger: &mut Ledger,
) -> anyhow::Result<()> {
    let spec = children::spec(route, queue);
    let mut n = 0;
    while n < events {
        let mut ctx = store.begin().await?;
        let mut staged = Vec::new();
        for _ in 0..CHUNK.min(events - n) {
            let (id, key) = (Uuid::now_v7(), format!("key-{}", n % KEYS));
            ctx.outbox()
                .stage(&spec, "order.placed", &Payload::new(n as i64))?
                .event_id(id)
                .ordering_key(key.clone());
            staged.push((id, key));
            n += 1;
        }
        ctx.commit().await?;
        for (id, key) in staged {
            ledger.staged(id, Some(&key));
        }
    }
    Ok(())
}

/// A factory of `tidings-bench child <args>` commands.
pub(super) fn child_command(args: &[&str]) -> impl FnMut() -> Command + use<> {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    move || {
        let exe = std::env::current_exe().expect("the bench program's path");
        let mut command = Command::new(exe);
        command
            .arg("child")
            .args(&args)
            .stdin(std::process::Stdio::null());
        command
    }
}

/// Completes once `events` distinct events have their effect, or fails
/// after ten minutes; cancels `done` either way.
async fn watch_effects(
    store: &PgOutboxStore,
    events: usize,
    done: CancellationToken,
) -> anyhow::Result<()> {
    let sql = format!(
        "select count(distinct event_id) from {}",
        table_in(store, "effects")
    );
    let deadline = Instant::now() + Duration::from_secs(600);
    let outcome = loop {
        let seen: i64 = match sqlx::query_scalar(AssertSqlSafe(sql.as_str()))
            .fetch_one(store.pool())
            .await
        {
            Ok(seen) => seen,
            Err(e) => break Err(e).context("counting effects"),
        };
        if seen as usize >= events {
            break Ok(());
        }
        if Instant::now() >= deadline {
            break Err(anyhow::anyhow!(
                "{seen} of {events} events had their effect in 10 min"
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    done.cancel();
    outcome
}

/// The event ids of the effects, in the order the handler wrote them.
async fn effects(store: &PgOutboxStore) -> anyhow::Result<Vec<Uuid>> {
    let sql = format!(
        "select event_id from {} order by seq",
        table_in(store, "effects")
    );
    Ok(sqlx::query_scalar(AssertSqlSafe(sql))
        .fetch_all(store.pool())
        .await?)
}

/// How often the handler started, counted outside its transaction.
async fn handler_runs(store: &PgOutboxStore) -> anyhow::Result<u64> {
    let sql = format!("select count(*) from {}", table_in(store, "handler_starts"));
    let runs: i64 = sqlx::query_scalar(AssertSqlSafe(sql))
        .fetch_one(store.pool())
        .await?;
    Ok(runs as u64)
}
