//! drain-rabbitmq: a backlog relayed to RabbitMQ (persistent, confirmed)
//! by a relay claiming several confirm windows at once and publishing them
//! a window at a time (the default configuration, and the goal's figure),
//! and by a relay claiming a single window at a time, against lapin
//! publishing the same messages with the same confirm window. The
//! backlogs are staged and drained in rounds, each alternating with the raw
//! publishing of the same number of messages and with the transport
//! publishing them alone.
//!
//! Each side publishes into a queue of its own, emptied before every round,
//! on a connection opened before the clock starts, and the rounds run the
//! sides in orders where each comes first, second, third and last equally
//! often and follows each of the others equally often, so none meets a
//! deeper queue, a colder connection or a busier moment than the others.

use std::time::{Duration, Instant};

use tidings_core::relay::{Relay, RelayOptions};
use tidings_core::{Envelope, OutboxSpec, Publisher};
use tidings_postgres::{PgOutboxStore, Retention};
use tidings_rabbitmq::{PublisherOptions, RabbitPublisher};

use crate::args::Sizes;
use crate::cpu::CpuTime;
use crate::env::{Env, spec};
use crate::load::stage_pending;
use crate::payload::{Payload, envelopes};
use crate::raw_publish::RawPublisher;
use crate::report::{Figure, Goal};

const NAME: &str = "drain-rabbitmq";

/// Rounds each side runs, alternating, so that a change in the machine's
/// load falls on all of them: one per order in [`ORDERS`].
const ROUNDS: usize = ORDERS.len();

pub(super) async fn run(
    env: &Env,
    sizes: &Sizes,
    report: &mut dyn FnMut(Figure),
) -> anyhow::Result<()> {
    let queues = [
        env.queue("bench-drain-raw").await?,
        env.queue("bench-drain-transport").await?,
        env.queue("bench-drain").await?,
        env.queue("bench-drain-wide").await?,
    ];
    let stores = [
        env.store("drain_rabbit", Retention::Delete).await?,
        env.store("drain_wide", Retention::Delete).await?,
    ];
    let result = measure(env, sizes, &stores, queues, report).await;
    for store in &stores {
        env.drop_store(store).await?;
    }
    for queue in queues {
        env.drop_queue(queue).await?;
    }
    result
}

/// The four sides, in the order of their queues.
#[derive(Debug, Clone, Copy)]
enum Side {
    Raw,
    Transport,
    /// A claim per confirm window.
    Relay,
    /// Claims of several windows, published a window at a time (the
    /// default configuration).
    WideRelay,
}

/// The orders of the rounds: a balanced Latin square of the four sides and
/// its rows reversed. Each side runs in each position twice and right
/// after each other side twice.
const ORDERS: [[Side; 4]; 8] = {
    use Side::{Raw as R, Relay as E, Transport as T, WideRelay as L};
    [
        [R, T, L, E],
        [T, E, R, L],
        [E, L, T, R],
        [L, R, E, T],
        [E, L, T, R],
        [L, R, E, T],
        [R, T, L, E],
        [T, E, R, L],
    ]
};

async fn measure(
    env: &Env,
    sizes: &Sizes,
    stores: &[PgOutboxStore; 2],
    queues: [&'static str; 4],
    report: &mut dyn FnMut(Figure),
) -> anyhow::Result<()> {
    for store in stores {
        env.stop_autovacuum(store).await?;
    }
    let per_round = sizes.drain_events.div_ceil(ROUNDS);
    let total = per_round * ROUNDS;
    let raw = RawPublisher::connect(&env.amqp_url).await?;
    let raw_envelopes = envelopes(queues[0], per_round)?;
    // The transport alone, without the store: where the relay's time goes.
    let transport = RabbitPublisher::new(
        env.amqp("tidings-bench-transport"),
        PublisherOptions::default(),
    );
    let transport_envelopes = envelopes(queues[1], per_round)?;
    // The transport opens its connection and finds its exchange untimed,
    // as each relay does in `relay`.
    transport.publish(&transport_envelopes[0]).await?;
    let window = sizes.batch_size;
    let relays = [
        relay(
            env,
            (window, window),
            &stores[0],
            queues[2],
            "tidings-bench-relay",
        )
        .await?,
        relay(
            env,
            (sizes.wide_claim, window),
            &stores[1],
            queues[3],
            "tidings-bench-relay-wide",
        )
        .await?,
    ];
    let mut took = [Duration::ZERO; 4];
    let mut cpu = [CpuTime::default(); 4];
    let mut relayed = [0; 2];
    for order in ORDERS {
        for (store, relay) in stores.iter().zip(&relays) {
            stage_pending(store, relay.0, per_round).await?;
            env.vacuum(store).await?;
        }
        for queue in queues {
            raw.purge(queue).await?;
        }
        for side in order {
            let before = CpuTime::now();
            took[side as usize] += match side {
                Side::Raw => raw.publish_all(&raw_envelopes, sizes.batch_size).await?,
                Side::Transport => {
                    publish_through(&transport, &transport_envelopes, sizes.batch_size).await?
                }
                Side::Relay | Side::WideRelay => {
                    let n = side as usize - Side::Relay as usize;
                    let started = Instant::now();
                    relayed[n] += relays[n].1.drain().await?.published;
                    started.elapsed()
                }
            };
            cpu[side as usize] += CpuTime::now() - before;
        }
    }
    for relayed in relayed {
        anyhow::ensure!(relayed == total, "relayed {relayed} of {total} events");
    }
    let took = |side: Side| took[side as usize];
    let raw_rate = Figure::rate(NAME, "raw confirmed publishing", total, took(Side::Raw));
    report(raw_rate.clone());
    let transport_rate = Figure::rate(NAME, "RabbitPublisher alone", total, took(Side::Transport));
    report(transport_rate.limit(raw_rate.value));
    report(
        Figure::rate(
            NAME,
            &format!("relayed events, claims of {window}"),
            total,
            took(Side::Relay),
        )
        .limit(raw_rate.value),
    );
    report(
        Figure::rate(
            NAME,
            &format!(
                "relayed events, claims of {} in windows of {window}{}",
                sizes.wide_claim,
                default_label(sizes.wide_claim, window)
            ),
            total,
            took(Side::WideRelay),
        )
        .limit(raw_rate.value)
        .goal(Goal::RatioAtLeast(0.85)),
    );
    let sides = [
        (Side::Raw, "raw"),
        (Side::Transport, "transport alone"),
        (Side::Relay, "relay, claims of one window"),
        (Side::WideRelay, "relay, wide claims"),
    ];
    for (side, name) in sides {
        report(Figure::cpu_per_thousand(
            NAME,
            name,
            cpu[side as usize],
            total,
        ));
    }
    Ok(())
}

/// A fresh route into `queue` and its relay on `store`, claiming `claim`
/// rows at a time and publishing them in windows of `window`, the relay's
/// connection open.
async fn relay(
    env: &Env,
    (claim, window): (usize, usize),
    store: &PgOutboxStore,
    queue: &'static str,
    connection_name: &str,
) -> anyhow::Result<(
    &'static OutboxSpec<Payload>,
    Relay<PgOutboxStore, RabbitPublisher>,
)> {
    let publisher = RabbitPublisher::new(env.amqp(connection_name), PublisherOptions::default());
    publisher.publish(&envelopes(queue, 1)?[0]).await?;
    let spec = spec(queue);
    let config = RelayOptions::default()
        .batch_size(claim)
        .publish_window(window);
    let relay = Relay::new(store.clone(), publisher, spec)?.options(config);
    Ok((spec, relay))
}

/// " (default)" where `claim` and `window` are the relay's defaults.
fn default_label(claim: usize, window: usize) -> &'static str {
    let defaults = (
        RelayOptions::DEFAULT_BATCH_SIZE,
        RelayOptions::DEFAULT_PUBLISH_WINDOW,
    );
    match (claim, window) == defaults {
        true => " (default)",
        false => "",
    }
}

/// Publishes `envelopes` through the transport, `batch` at a time.
async fn publish_through(
    transport: &RabbitPublisher,
    envelopes: &[Envelope],
    batch: usize,
) -> anyhow::Result<Duration> {
    let started = Instant::now();
    for chunk in envelopes.chunks(batch.max(1)) {
        for result in transport.publish_batch(chunk).await {
            result?;
        }
    }
    Ok(started.elapsed())
}
