//! The scenarios, one module each. Every scenario makes its own schemas and
//! queues, measures tidings and its raw limit in the same run, and removes
//! what it made.

mod chaos;
mod consume;
mod consume_stored;
#[cfg(feature = "kafka")]
mod drain_kafka;
mod drain_noop;
mod drain_pooled;
mod drain_rabbitmq;
mod drain_wal;
mod growth;
mod latency;
mod latency_wal;
mod memory;
#[cfg(feature = "mongo")]
mod mongo;
#[cfg(feature = "otel")]
mod otel_overhead;
mod pinned;
mod routes;
mod scale_out;
mod stage;
mod stage_wal;
mod stored_outage;
mod tenants;
mod woken;

use std::time::{Duration, Instant};

use anyhow::bail;
use tidings_core::relay::{Relay, RelayOptions};
use tidings_core::{Envelope, OutboxSpec, Publisher, PublisherExt};
use tidings_postgres::PgOutboxStore;

use crate::env::Env;
use crate::payload::Payload;
use crate::publishers::NoopPublisher;
use crate::report::Report;
use crate::sizes::{LatencyWake, Sizes};

/// Runs one child process of a scenario: the chaos scenario's relay or
/// consumer, the scale-out scenario's relay, or the memory scenario's.
pub(crate) async fn run_child(args: Vec<String>) -> anyhow::Result<String> {
    match args.first().map(String::as_str) {
        Some(name) if name.starts_with("chaos-") => chaos::run_child(args).await,
        Some(name) if name.starts_with("scale-") => scale_out::run_child(args).await,
        _ => memory::run_child(args).await,
    }
}

/// One benchmark scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scenario {
    /// Staging throughput against two-row transactions.
    Stage,
    /// Staging into log-tailing stores, in message and table mode, against
    /// two-row transactions on the same cluster.
    StageWal,
    /// Draining to a publisher that does nothing, against a bare SQL loop.
    DrainNoop,
    /// Draining to RabbitMQ, against raw confirmed publishing.
    DrainRabbitmq,
    /// Draining to RabbitMQ through PgBouncer in transaction mode, against
    /// the same drain reaching PostgreSQL directly.
    DrainRabbitmqPooled,
    /// Draining to Kafka, against raw librdkafka producing, then
    /// consuming from it (built with the `kafka` feature).
    DrainKafka,
    /// Draining a backlog from a replication slot, in message and table
    /// mode, against reading the same backlog from a second slot; beside
    /// it the polling relay on the same cluster.
    DrainWal,
    /// Commit-to-publish latency at steady rates.
    Latency,
    /// Consuming with the PostgreSQL inbox, against two-row transactions.
    Consume,
    /// Consuming with the stored inbox: received and handled rates against
    /// two-row transactions, beside today's inbox path.
    ConsumeStored,
    /// A handler outage under a steady rate, with today's inbox and with
    /// the stored inbox: redeliveries, parked messages and the drain after
    /// recovery.
    StoredOutage,
    /// Peak RSS of a relay process and of a consumer process.
    Memory,
    /// Draining beside a million retained published rows, against an
    /// empty table.
    Growth,
    /// Relay and consumer processes killed on a schedule, against the same
    /// run undisturbed; the ledger must show nothing lost or doubled.
    Chaos,
    /// Stage and drain-rabbitmq with OpenTelemetry spans exported to a
    /// no-op exporter, against the same runs without (built with the
    /// `otel` feature).
    OtelOverhead,
    /// Draining one route with 1, 2 and 4 relay processes, against one;
    /// then the takeover of a killed relay's claims.
    ScaleOut,
    /// Draining 50 routes with one shared relay, against one route with
    /// one relay.
    Routes,
    /// Draining 10 databases with one shared relay, against one database
    /// with one relay; the slowest tenant's progress against the fastest's.
    Tenants,
    /// A sustained run with a snapshot held open, against the same run
    /// without (not part of `all`: it runs for minutes).
    Pinned,
    /// The pinned run in message mode, relayed from the slot (not part of
    /// `all`: it runs for minutes).
    PinnedWal,
    /// Staging on MongoDB, against the same transactions by the raw driver
    /// (built with the `mongo` feature).
    MongoStage,
    /// Draining on MongoDB to a publisher that does nothing, against a
    /// raw-driver claim-and-delete loop (built with the `mongo` feature).
    MongoDrainNoop,
    /// Commit-to-publish latency on MongoDB at steady rates (built with
    /// the `mongo` feature).
    MongoLatency,
}

impl Scenario {
    /// Every scenario, in the order `all` runs them.
    pub(crate) const ALL: [Scenario; 23] = [
        Scenario::Stage,
        Scenario::StageWal,
        Scenario::DrainNoop,
        Scenario::DrainRabbitmq,
        Scenario::DrainRabbitmqPooled,
        Scenario::DrainKafka,
        Scenario::DrainWal,
        Scenario::Latency,
        Scenario::Consume,
        Scenario::ConsumeStored,
        Scenario::StoredOutage,
        Scenario::Memory,
        Scenario::Growth,
        Scenario::Chaos,
        Scenario::OtelOverhead,
        Scenario::ScaleOut,
        Scenario::Routes,
        Scenario::Tenants,
        Scenario::Pinned,
        Scenario::PinnedWal,
        Scenario::MongoStage,
        Scenario::MongoDrainNoop,
        Scenario::MongoLatency,
    ];

    /// Whether this build can run the scenario.
    fn built(self) -> bool {
        let unbuilt = (self == Scenario::DrainKafka && !cfg!(feature = "kafka"))
            || (self == Scenario::OtelOverhead && !cfg!(feature = "otel"))
            || (self.feature() == "mongo" && !cfg!(feature = "mongo"));
        !unbuilt
    }

    /// Whether `all` runs the scenario: pinned and pinned-wal run for
    /// minutes, so only when named.
    fn in_all(self) -> bool {
        !matches!(self, Scenario::Pinned | Scenario::PinnedWal)
    }

    /// The scenario's name on the command line.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Scenario::Stage => "stage",
            Scenario::StageWal => "stage-wal",
            Scenario::DrainNoop => "drain-noop",
            Scenario::DrainRabbitmq => "drain-rabbitmq",
            Scenario::DrainRabbitmqPooled => "drain-rabbitmq-pooled",
            Scenario::DrainKafka => "drain-kafka",
            Scenario::DrainWal => "drain-wal",
            Scenario::Latency => "latency",
            Scenario::Consume => "consume",
            Scenario::ConsumeStored => "consume-stored",
            Scenario::StoredOutage => "stored-outage",
            Scenario::Memory => "memory",
            Scenario::Growth => "growth",
            Scenario::Chaos => "chaos",
            Scenario::OtelOverhead => "otel-overhead",
            Scenario::ScaleOut => "scale-out",
            Scenario::Routes => "routes",
            Scenario::Tenants => "tenants",
            Scenario::Pinned => "pinned",
            Scenario::PinnedWal => "pinned-wal",
            Scenario::MongoStage => "mongo-stage",
            Scenario::MongoDrainNoop => "mongo-drain-noop",
            Scenario::MongoLatency => "mongo-latency",
        }
    }

    /// The feature a scenario needs built.
    fn feature(self) -> &'static str {
        match self {
            Scenario::OtelOverhead => "otel",
            Scenario::MongoStage | Scenario::MongoDrainNoop | Scenario::MongoLatency => "mongo",
            _ => "kafka",
        }
    }

    /// `all`, or one scenario's name.
    pub(crate) fn parse(name: &str) -> anyhow::Result<Vec<Scenario>> {
        if name == "all" {
            let all = Self::ALL.into_iter().filter(|s| s.built() && s.in_all());
            return Ok(all.collect());
        }
        match Self::ALL.into_iter().find(|s| s.name() == name) {
            Some(s) if !s.built() => {
                bail!(
                    "{name} needs the bench built with `--features {}`",
                    s.feature()
                )
            }
            Some(s) => Ok(vec![s]),
            None => bail!("unknown scenario {name}"),
        }
    }

    /// Runs the scenario; `report` is called with each figure as soon as
    /// it is known.
    pub(crate) async fn run(
        self,
        env: &Env,
        sizes: &Sizes,
        report: Report<'_>,
    ) -> anyhow::Result<()> {
        // Each scenario starts with the database's dirty pages written out,
        // so none pays for the writes of the one before it.
        env.checkpoint().await;
        match self {
            Scenario::Stage => stage::run(env, sizes, report).await,
            Scenario::StageWal => stage_wal::run(env, sizes, report).await,
            Scenario::DrainNoop => drain_noop::run(env, sizes, report).await,
            Scenario::DrainRabbitmq => drain_rabbitmq::run(env, sizes, report).await,
            Scenario::DrainRabbitmqPooled => drain_pooled::run(env, sizes, report).await,
            #[cfg(feature = "kafka")]
            Scenario::DrainKafka => drain_kafka::run(env, sizes, report).await,
            #[cfg(not(feature = "kafka"))]
            Scenario::DrainKafka => bail!("drain-kafka needs `--features kafka`"),
            Scenario::DrainWal => drain_wal::run(env, sizes, report).await,
            Scenario::Latency if sizes.latency_wake == LatencyWake::Wal => {
                latency_wal::run(env, sizes, report).await
            }
            Scenario::Latency => latency::run(env, sizes, report).await,
            Scenario::Consume => consume::run(env, sizes, report).await,
            Scenario::ConsumeStored => consume_stored::run(env, sizes, report).await,
            Scenario::StoredOutage => stored_outage::run(env, sizes, report).await,
            Scenario::Memory => memory::run(env, sizes, report).await,
            Scenario::Growth => growth::run(env, sizes, report).await,
            Scenario::Chaos => chaos::run(env, sizes, report).await,
            #[cfg(feature = "otel")]
            Scenario::OtelOverhead => otel_overhead::run(env, sizes, report).await,
            #[cfg(not(feature = "otel"))]
            Scenario::OtelOverhead => bail!("otel-overhead needs `--features otel`"),
            Scenario::ScaleOut => scale_out::run(env, sizes, report).await,
            Scenario::Routes => routes::run(env, sizes, report).await,
            Scenario::Tenants => tenants::run(env, sizes, report).await,
            Scenario::Pinned => pinned::run(env, sizes, report).await,
            Scenario::PinnedWal => pinned::wal::run(env, sizes, report).await,
            #[cfg(feature = "mongo")]
            Scenario::MongoStage => mongo::stage::run(sizes, report).await,
            #[cfg(feature = "mongo")]
            Scenario::MongoDrainNoop => mongo::drain_noop::run(sizes, report).await,
            #[cfg(feature = "mongo")]
            Scenario::MongoLatency => mongo::latency::run(sizes, report).await,
            #[cfg(not(feature = "mongo"))]
            Scenario::MongoStage | Scenario::MongoDrainNoop | Scenario::MongoLatency => {
                bail!("{} needs `--features mongo`", self.name())
            }
        }
    }
}

/// Relays the `count` pending events of `store` to a publisher that does
/// nothing; returns how long it took.
async fn relay_to_nothing(
    store: &PgOutboxStore,
    spec: &'static OutboxSpec<Payload>,
    count: usize,
    options: RelayOptions,
) -> anyhow::Result<Duration> {
    let relay = Relay::new(store.clone(), NoopPublisher, spec)?.options(options);
    let started = Instant::now();
    let drained = relay.drain().await?;
    let took = started.elapsed();
    anyhow::ensure!(
        drained.published == count,
        "relayed {} of {count} events",
        drained.published
    );
    Ok(took)
}

/// Publishes `envelopes` through a transport's publisher, `batch` at a
/// time, waiting for each batch's confirms; returns how long it took.
async fn publish_through<P: Publisher>(
    transport: &P,
    envelopes: &[Envelope],
    batch: usize,
) -> anyhow::Result<Duration> {
    in_windows(envelopes, batch, |chunk| async move {
        for result in transport.publish_batch(chunk).await {
            result?;
        }
        Ok(())
    })
    .await
}

/// Sends `envelopes` `window` at a time through `send`, which returns once
/// its window is acknowledged, so the next waits for it; returns how long
/// it took.
async fn in_windows<'e, F>(
    envelopes: &'e [Envelope],
    window: usize,
    mut send: impl FnMut(&'e [Envelope]) -> F,
) -> anyhow::Result<Duration>
where
    F: Future<Output = anyhow::Result<()>>,
{
    let started = Instant::now();
    for chunk in envelopes.chunks(window.max(1)) {
        send(chunk).await?;
    }
    Ok(started.elapsed())
}
