//! drain-rabbitmq-pooled: the relay of drain-rabbitmq in its default
//! configuration (claims of 500 published in windows of 100, locked
//! claims) with its store reaching PostgreSQL directly, against the same
//! relay with its store behind PgBouncer in transaction mode
//! (`PGBOUNCER_URL`, `Pooling::Transaction`), with locked and with leased
//! claims. The backlogs are staged and drained in rounds, the three sides
//! in orders where each comes first, second and last equally often, each
//! into a queue of its own, emptied before every round, on a connection
//! opened before the clock starts.

use std::time::{Duration, Instant};

use sqlx::PgPool;
use tidings_core::relay::RelayOptions;
use tidings_postgres::{ClaimMode, PgOutboxStore, Retention};
use tidings_rabbitmq::{PublisherOptions, RabbitPublisher};

use crate::cpu::CpuTime;
use crate::env::Env;
use crate::raw_publish::RawPublisher;
use crate::report::{Figure, Goal, Report};
use crate::rounds::DrainRounds;
use crate::sizes::Sizes;
use crate::warm_relay::warm_relay;

const NAME: &str = "drain-rabbitmq-pooled";

/// Connections of the pool through the pooler, as many as the relay of
/// the direct side may use of the bench's pool.
const POOLED_CONNECTIONS: u32 = 8;

/// The three sides, in the order of their stores and queues.
#[derive(Debug, Clone, Copy)]
enum Side {
    Direct,
    PooledLocked,
    PooledLeased,
}

/// Every side, run in the rounds of [`DrainRounds`].
const SIDES: [Side; 3] = [Side::Direct, Side::PooledLocked, Side::PooledLeased];

pub(super) async fn run(env: &Env, sizes: &Sizes, report: Report<'_>) -> anyhow::Result<()> {
    let pooled = env.pooled_pool(POOLED_CONNECTIONS).await?;
    let queues = [
        env.queue("bench-drain-direct").await?,
        env.queue("bench-drain-pooled").await?,
        env.queue("bench-drain-pooled-leased").await?,
    ];
    let stores = stores(env, &pooled).await?;
    let result = measure(env, sizes, &stores, queues, report).await;
    env.remove(&stores, queues).await?;
    result
}

/// A store for each side: the bench's own pool, then the pooled one in
/// each claim mode.
async fn stores(env: &Env, pooled: &PgPool) -> anyhow::Result<[PgOutboxStore; 3]> {
    Ok([
        env.store("drain_direct", Retention::Delete).await?,
        env.pooled_store(pooled, "pooled_locked", ClaimMode::Locked)
            .await?,
        env.pooled_store(pooled, "pooled_leased", ClaimMode::Leased)
            .await?,
    ])
}

async fn measure(
    env: &Env,
    sizes: &Sizes,
    stores: &[PgOutboxStore; 3],
    queues: [&'static str; 3],
    report: Report<'_>,
) -> anyhow::Result<()> {
    let rounds = DrainRounds::new(env, stores, SIDES, sizes.drain_events).await?;
    let total = rounds.total();
    let raw = RawPublisher::connect(&env.amqp_url).await?;
    // The relay in its default configuration: wide claims published in
    // windows of the batch size.
    let options = RelayOptions::default()
        .batch_size(sizes.wide_claim)
        .publish_window(sizes.batch_size);
    let mut relays = Vec::new();
    for (n, (store, queue)) in stores.iter().zip(queues).enumerate() {
        let name = format!("tidings-bench-pooled-{n}");
        let publisher = RabbitPublisher::new(env.amqp(&name), PublisherOptions::default());
        relays.push(warm_relay(store, publisher, queue, options).await?);
    }
    let mut took = [Duration::ZERO; 3];
    let mut cpu = [CpuTime::default(); 3];
    let mut relayed = [0; 3];
    for &order in &rounds.orders {
        let specs = relays.iter().map(|(spec, _)| *spec);
        rounds.stage(env, stores.iter().zip(specs)).await?;
        for queue in queues {
            raw.purge(queue).await?;
        }
        for side in order {
            let n = side as usize;
            let before = CpuTime::now();
            let started = Instant::now();
            relayed[n] += relays[n].1.drain().await?.published;
            took[n] += started.elapsed();
            cpu[n] += CpuTime::now() - before;
        }
    }
    for relayed in relayed {
        anyhow::ensure!(relayed == total, "relayed {relayed} of {total} events");
    }
    let claims = format!(
        "claims of {} in windows of {}",
        sizes.wide_claim, sizes.batch_size
    );
    let direct = Figure::rate(
        NAME,
        &format!("relayed events, direct, locked {claims}"),
        total,
        took[Side::Direct as usize],
    );
    report(direct.clone());
    report(
        Figure::rate(
            NAME,
            &format!("relayed events through PgBouncer (transaction mode), locked {claims}"),
            total,
            took[Side::PooledLocked as usize],
        )
        .limit(direct.value)
        .goal(Goal::RatioAtLeast(0.8)),
    );
    report(
        Figure::rate(
            NAME,
            &format!("relayed events through PgBouncer (transaction mode), leased {claims}"),
            total,
            took[Side::PooledLeased as usize],
        )
        .limit(direct.value),
    );
    let sides = [
        "direct",
        "through PgBouncer, locked",
        "through PgBouncer, leased",
    ];
    for (n, side) in sides.iter().enumerate() {
        report(Figure::cpu_per_thousand(NAME, side, cpu[n], total));
    }
    Ok(())
}
