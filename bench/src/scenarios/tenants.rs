//! tenants: [`TENANTS`] databases, each with a backlog on one route,
//! drained to RabbitMQ by one [`SharedRelay`] serving every database as a
//! tenant of its own, against one database's backlog drained alone by one
//! [`Relay`] (the limit). While the shared relay drains, every tenant's
//! progress (the share of its backlog published) is read every
//! [`SAMPLE`]; the slowest tenant's progress over the fastest's, at its
//! lowest, tells how fairly the relay shares its passes (1 when every
//! drain ended before the first reading, as at the smoke test's sizes).
//! Four rounds, each side first in two.

use std::time::{Duration, Instant};

use sqlx::AssertSqlSafe;
use sqlx::postgres::PgPoolOptions;
use tidings_core::relay::{Relay, RelayOptions, SharedRelay, Tenant};
use tidings_core::{OutboxSpec, OutboxStore};
use tidings_postgres::{PgOutboxOptions, PgOutboxStore, Retention};
use tidings_rabbitmq::{PublisherOptions, RabbitPublisher};
use tidings_testing::names::unique_name;
use tidings_testing::services::database_url;
use tokio_util::sync::CancellationToken;

use crate::env::{Env, connect_options, spec, stop_autovacuum_on, vacuum_on};
use crate::load::stage_pending;
use crate::payload::{Payload, envelopes};
use crate::raw_publish::RawPublisher;
use crate::report::{Figure, Goal, Report};
use crate::sizes::Sizes;

const NAME: &str = "tenants";
/// Databases served by the shared relay.
const TENANTS: usize = 10;
/// How often the tenants' progress is read: every second, as the goal
/// asks.
const SAMPLE: Duration = Duration::from_secs(1);
/// Rows a tenant's pass claims in the shared relay. A turn is one pass,
/// so a tenant can lead another by at most a batch or so: at the default
/// 1,000, one round of ten tenants moves 10,000 rows, most of a second
/// here, and in the first second the last tenants in line have nothing
/// yet. A service with many tenants sizes its batches for the fairness it
/// wants; this is the scenario's.
const TENANT_BATCH: usize = 200;
/// The most connections each tenant's pool, and its locked claims, open.
const CONNECTIONS: u32 = 1;
/// Rounds of both sides, each first in half of them.
const ROUNDS: usize = 4;

/// One tenant: its database, its store there and the relay of its route.
struct Tenancy {
    database: String,
    store: PgOutboxStore,
    spec: &'static OutboxSpec<Payload>,
    relay: Relay<PgOutboxStore, RabbitPublisher>,
}

pub(super) async fn run(env: &Env, sizes: &Sizes, report: Report<'_>) -> anyhow::Result<()> {
    let queue = env.queue("bench-tenants").await?;
    let publisher = RabbitPublisher::new(
        env.amqp("tidings-bench-tenants"),
        PublisherOptions::default(),
    );
    let mut tenants = Vec::new();
    let mut result = Ok(());
    for n in 0..=TENANTS {
        match tenancy(env, &publisher, queue, n).await {
            Ok(tenant) => tenants.push(tenant),
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    if result.is_ok() {
        result = measure(env, sizes, &tenants, queue, report).await;
    }
    for tenant in tenants {
        tenant.store.pool().close().await;
        let sql = format!(
            "drop database if exists \"{}\" with (force)",
            tenant.database
        );
        sqlx::query(AssertSqlSafe(sql)).execute(&env.pool).await?;
    }
    env.drop_queue(queue).await?;
    result
}

/// Tenant `n`: a fresh database with a migrated store and a route into
/// `queue`. The last one, `TENANTS`, is the alone side's, with the
/// relay's default options; the others claim [`TENANT_BATCH`] rows a
/// pass.
async fn tenancy(
    env: &Env,
    publisher: &RabbitPublisher,
    queue: &'static str,
    n: usize,
) -> anyhow::Result<Tenancy> {
    let database = unique_name("bench_tenant");
    let sql = format!("create database \"{database}\"");
    sqlx::query(AssertSqlSafe(sql)).execute(&env.pool).await?;
    let pool = PgPoolOptions::new()
        .max_connections(CONNECTIONS)
        .connect_with(connect_options(&database_url())?.database(&database))
        .await?;
    let options = PgOutboxOptions::new()
        .retention(Retention::Delete)
        .claim_connections(CONNECTIONS as usize);
    let store = PgOutboxStore::new(pool, options)?;
    store.migrate().await?;
    stop_autovacuum_on(store.pool(), &store).await?;
    tidings_core::PublisherExt::publish(publisher, &envelopes(queue, 1)?[0]).await?;
    let spec: &'static OutboxSpec<Payload> = spec(queue);
    let mut relay = Relay::new(store.clone(), publisher.clone(), spec)?
        .tenant(Tenant::new(format!("tenant-{n}")));
    if n < TENANTS {
        let options = RelayOptions::default()
            .batch_size(TENANT_BATCH)
            .publish_window(TENANT_BATCH);
        relay = relay.options(options);
    }
    Ok(Tenancy {
        database,
        store,
        spec,
        relay,
    })
}

async fn measure(
    env: &Env,
    sizes: &Sizes,
    tenants: &[Tenancy],
    queue: &'static str,
    report: Report<'_>,
) -> anyhow::Result<()> {
    let (shared_side, alone_side) = tenants.split_at(TENANTS);
    let backlog = (sizes.drain_events / TENANTS).max(1);
    let purger = RawPublisher::connect_channels(&env.amqp_url, 1).await?;
    let (mut alone_took, mut shared_took) = (Duration::ZERO, Duration::ZERO);
    let (mut fairness, mut samples) = (1.0_f64, 0);
    for round in 0..ROUNDS {
        for tenant in tenants {
            stage_pending(&tenant.store, tenant.spec, backlog).await?;
            vacuum_on(tenant.store.pool(), &tenant.store).await?;
        }
        purger.purge(queue).await?;
        // Each side first in half the rounds: ABBA, BAAB, ...
        let alone_first = (round + round / 2) % 2 == 0;
        for alone in [alone_first, !alone_first] {
            if alone {
                let started = Instant::now();
                let drained = alone_side[0].relay.drain().await?;
                alone_took += started.elapsed();
                anyhow::ensure!(drained.published == backlog, "alone: {drained:?}");
            } else {
                let (took, spreads) = drain_shared(shared_side, backlog).await?;
                shared_took += took;
                samples += spreads.len();
                fairness = spreads.into_iter().fold(fairness, f64::min);
            }
        }
    }
    let one = Figure::rate(
        NAME,
        "one database alone, one relay",
        backlog * ROUNDS,
        alone_took,
    );
    report(one.clone());
    let measure = format!(
        "{TENANTS} databases, one shared relay (claims of {TENANT_BATCH}), all tenants together"
    );
    let total = backlog * TENANTS * ROUNDS;
    report(
        Figure::rate(NAME, &measure, total, shared_took)
            .limit(one.value)
            .goal(Goal::RatioAtLeast(0.8)),
    );
    let measure = "slowest tenant's progress over the fastest's, lowest at any second";
    report(Figure::new(NAME, measure, fairness, "share").goal(Goal::AtLeast(0.6)));
    let measure = "progress readings taken";
    report(Figure::new(NAME, measure, samples as f64, ""));
    Ok(())
}

/// Drains every tenant's backlog of `backlog` events with one shared
/// relay; returns how long it took and, at each reading, the slowest
/// tenant's progress over the fastest's.
async fn drain_shared(tenants: &[Tenancy], backlog: usize) -> anyhow::Result<(Duration, Vec<f64>)> {
    let relay = (tenants.iter())
        .map(|tenant| tenant.relay.clone())
        .fold(SharedRelay::new(), SharedRelay::relay);
    let started = Instant::now();
    let done = CancellationToken::new();
    let drain = async {
        let drained = relay.drain().await;
        done.cancel();
        drained
    };
    // Read beside the drain, never pausing it.
    let read = async {
        let mut spreads = Vec::new();
        loop {
            tokio::select! {
                () = done.cancelled() => return Ok::<_, anyhow::Error>(spreads),
                () = tokio::time::sleep(SAMPLE) => {
                    spreads.push(progress_spread(tenants, backlog).await?);
                }
            }
        }
    };
    let (drained, spreads) = tokio::join!(drain, read);
    let (drained, spreads) = (drained?, spreads?);
    let took = started.elapsed();
    let all = backlog * tenants.len();
    anyhow::ensure!(drained.published == all, "shared: {drained:?} of {all}");
    Ok((took, spreads))
}

/// The slowest tenant's progress over the fastest's, each the share of
/// its backlog gone from its outbox.
async fn progress_spread(tenants: &[Tenancy], backlog: usize) -> anyhow::Result<f64> {
    let mut progress = Vec::with_capacity(tenants.len());
    for tenant in tenants {
        let stats = tenant.store.stats(&tenant.relay.route().name).await?;
        let left = (stats.pending + stats.in_flight) as f64;
        progress.push(1.0 - left / backlog as f64);
    }
    tracing::debug!(?progress, "tenants' progress");
    let fastest = progress.iter().copied().fold(0.0, f64::max);
    let slowest = progress.iter().copied().fold(1.0, f64::min);
    Ok(match fastest > 0.0 {
        true => slowest / fastest,
        false => 1.0,
    })
}
