//! routes: a backlog spread over [`ROUTES`] routes, drained to RabbitMQ
//! by one [`SharedRelay`] (its default passes at once), against the same
//! number of events on one route drained by one [`Relay`] (the limit, its
//! options the defaults too), and by one `Relay` per route running side by
//! side, as a service without the shared relay would run them. Each side
//! has a store of its own on a pool of its own, whose connections carry
//! its name, so the connections it opened are counted at the end of its
//! drain. The sides run in rounds, each going first, second and last once.

use std::time::{Duration, Instant};

use futures::future::try_join_all;
use sqlx::postgres::PgPoolOptions;
use tidings_core::OutboxSpec;
use tidings_core::relay::{PassReport, Relay, SharedRelay};
use tidings_postgres::{PgOutboxOptions, PgOutboxStore, Retention};
use tidings_rabbitmq::{PublisherOptions, RabbitPublisher};
use tidings_testing::names::unique_name;
use tidings_testing::services::database_url;

use crate::env::{Env, connect_options, spec};
use crate::load::stage_pending;
use crate::payload::{Payload, envelopes};
use crate::raw_publish::RawPublisher;
use crate::report::{Figure, Goal, Report};
use crate::sizes::Sizes;

const NAME: &str = "routes";
/// Routes of the many-route sides.
const ROUTES: usize = 50;
/// The most connections each side's pool may open.
const POOL: u32 = 16;

/// The three sides.
#[derive(Debug, Clone, Copy)]
enum Side {
    /// One route, one relay: the limit.
    OneRoute,
    /// [`ROUTES`] routes, one shared relay.
    Shared,
    /// [`ROUTES`] routes, a relay each.
    RelayEach,
}

/// The orders of the rounds: each side first, second and last once.
const ORDERS: [[Side; 3]; 3] = {
    use Side::{OneRoute as O, RelayEach as E, Shared as S};
    [[O, S, E], [S, E, O], [E, O, S]]
};

/// One side: its store, its routes and their relays, its queue.
struct Lane {
    store: PgOutboxStore,
    specs: Vec<&'static OutboxSpec<Payload>>,
    relays: Vec<Relay<PgOutboxStore, RabbitPublisher>>,
    queue: &'static str,
    /// The application name of its connections.
    name: String,
}

pub(super) async fn run(env: &Env, sizes: &Sizes, report: Report<'_>) -> anyhow::Result<()> {
    let mut lanes = Vec::new();
    let mut result = Ok(());
    for (side, routes) in [
        (Side::OneRoute, 1),
        (Side::Shared, ROUTES),
        (Side::RelayEach, ROUTES),
    ] {
        match lane(env, side, routes).await {
            Ok(lane) => lanes.push(lane),
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    if result.is_ok() {
        result = measure(env, sizes, &lanes, report).await;
    }
    for lane in &lanes {
        env.drop_store(&lane.store).await?;
        env.drop_queue(lane.queue).await?;
        lane.store.pool().close().await;
    }
    result
}

/// A side's store in a fresh schema on a pool of its own, its queue, and
/// `routes` routes into that queue with a relay each, their publisher's
/// connection open.
async fn lane(env: &Env, side: Side, routes: usize) -> anyhow::Result<Lane> {
    let name = unique_name("bench-routes");
    let pool = PgPoolOptions::new()
        .max_connections(POOL)
        .connect_with(connect_options(&database_url())?.application_name(&name))
        .await?;
    let options = PgOutboxOptions::new()
        .schema(unique_name("bench_routes"))
        .retention(Retention::Delete);
    let store = PgOutboxStore::new(pool, options)?;
    store.migrate().await?;
    env.stop_autovacuum(&store).await?;
    let queue = env.queue(&format!("bench-routes-{side:?}")).await?;
    let publisher = RabbitPublisher::new(env.amqp(&name), PublisherOptions::default());
    tidings_core::PublisherExt::publish(&publisher, &envelopes(queue, 1)?[0]).await?;
    let specs: Vec<_> = (0..routes).map(|_| spec(queue)).collect();
    let relays = (specs.iter())
        .map(|spec| Relay::new(store.clone(), publisher.clone(), *spec))
        .collect::<Result<_, _>>()?;
    Ok(Lane {
        store,
        specs,
        relays,
        queue,
        name,
    })
}

async fn measure(
    env: &Env,
    sizes: &Sizes,
    lanes: &[Lane],
    report: Report<'_>,
) -> anyhow::Result<()> {
    let per_route = sizes.drain_events.div_ceil(ROUTES * ORDERS.len()).max(1);
    let per_round = per_route * ROUTES;
    let purger = RawPublisher::connect_channels(&env.amqp_url, 1).await?;
    let mut took = [Duration::ZERO; 3];
    for order in ORDERS {
        for lane in lanes {
            let each = per_round / lane.specs.len();
            for spec in &lane.specs {
                stage_pending(&lane.store, spec, each).await?;
            }
            env.vacuum(&lane.store).await?;
            purger.purge(lane.queue).await?;
        }
        for side in order {
            let lane = &lanes[side as usize];
            let started = Instant::now();
            let drained = drain(side, lane).await?;
            took[side as usize] += started.elapsed();
            anyhow::ensure!(
                drained.published == per_round,
                "{side:?} relayed {} of {per_round} events",
                drained.published
            );
        }
    }
    let total = per_round * ORDERS.len();
    let one = Figure::rate(NAME, "one route, one relay", total, took[0]);
    report(one.clone());
    let shared = format!(
        "{ROUTES} routes, one shared relay ({} passes at once)",
        SharedRelay::<PgOutboxStore, RabbitPublisher>::DEFAULT_PASSES
    );
    report(
        Figure::rate(NAME, &shared, total, took[1])
            .limit(one.value)
            .goal(Goal::RatioAtLeast(0.9)),
    );
    let each = format!("{ROUTES} routes, a relay each");
    report(Figure::rate(NAME, &each, total, took[2]).limit(one.value));
    let labels = ["one route, one relay", &shared, &each];
    for (lane, label) in lanes.iter().zip(labels) {
        let opened = connections(env, &lane.name).await?;
        report(Figure::new(
            NAME,
            &format!("{label}: PostgreSQL connections opened"),
            opened as f64,
            "",
        ));
    }
    Ok(())
}

/// Drains the lane's backlog the side's way.
async fn drain(side: Side, lane: &Lane) -> anyhow::Result<PassReport> {
    Ok(match side {
        Side::OneRoute => lane.relays[0].drain().await?,
        Side::Shared => {
            let shared = lane
                .relays
                .iter()
                .cloned()
                .fold(SharedRelay::new(), SharedRelay::relay);
            shared.drain().await?
        }
        Side::RelayEach => {
            let drains = try_join_all(lane.relays.iter().map(|relay| relay.drain())).await?;
            drains
                .into_iter()
                .fold(PassReport::default(), |mut total, report| {
                    total.add(report);
                    total
                })
        }
    })
}

/// Connections open under the application name `name`.
async fn connections(env: &Env, name: &str) -> anyhow::Result<i64> {
    Ok(
        sqlx::query_scalar("select count(*) from pg_stat_activity where application_name = $1")
            .bind(name)
            .fetch_one(&env.pool)
            .await?,
    )
}
