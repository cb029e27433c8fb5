//! drain-rabbitmq: a backlog relayed to RabbitMQ (persistent, confirmed)
//! by the relay with its default options (the goal's figure) and by one
//! publishing claims of several windows of `--batch-size` a window at a
//! time on one confirm channel, against the broker's ceiling for the same
//! messages: lapin publishing them over a sweep of confirm windows and
//! confirm channels, the fastest setting of the sweep. The backlogs are
//! staged and drained in rounds, each alternating with the raw sweep and
//! with the transport publishing the same number of messages alone.
//!
//! Each side publishes into a queue of its own, emptied before every round,
//! on a connection opened before the clock starts, and the rounds run the
//! sides in orders where each comes first, second, third and last equally
//! often and follows each of the others equally often, so none meets a
//! deeper queue, a colder connection or a busier moment than the others.

use std::time::{Duration, Instant};

use tidings_core::PublisherExt;
use tidings_core::relay::RelayOptions;
use tidings_postgres::{PgOutboxStore, Retention};
use tidings_rabbitmq::{PublisherOptions, RabbitPublisher};

use super::publish_through;
use crate::cpu::CpuTime;
use crate::env::Env;
use crate::payload::envelopes;
use crate::raw_publish::RawPublisher;
use crate::raw_sweep::{self, Setting, Sweep};
use crate::report::{Figure, Goal, Report};
use crate::rounds::DrainRounds;
use crate::sizes::Sizes;
use crate::warm_relay::warm_relay;

const NAME: &str = "drain-rabbitmq";

pub(super) async fn run(env: &Env, sizes: &Sizes, report: Report<'_>) -> anyhow::Result<()> {
    let queues = [
        env.queue("bench-drain-raw").await?,
        env.queue("bench-drain-transport").await?,
        env.queue("bench-drain").await?,
        env.queue("bench-drain-narrow").await?,
    ];
    let stores = [
        env.store("drain_rabbit", Retention::Delete).await?,
        env.store("drain_narrow", Retention::Delete).await?,
    ];
    let result = measure(env, sizes, &stores, queues, report).await;
    env.remove(&stores, queues).await?;
    result
}

/// The four sides, in the order of their queues.
#[derive(Debug, Clone, Copy)]
enum Side {
    /// Raw lapin, swept over windows and channels.
    Raw,
    /// The transport alone, publishing in the relay's batches.
    Transport,
    /// The relay with its default options (the goal's figure).
    Relay,
    /// Claims of several windows of `--batch-size` published one window at
    /// a time on one confirm channel.
    NarrowRelay,
}

/// Every side, run in the rounds of [`DrainRounds`], alternating, so
/// that a change in the machine's load falls on all of them.
const SIDES: [Side; 4] = [Side::Raw, Side::Transport, Side::Relay, Side::NarrowRelay];

async fn measure(
    env: &Env,
    sizes: &Sizes,
    stores: &[PgOutboxStore; 2],
    queues: [&'static str; 4],
    report: Report<'_>,
) -> anyhow::Result<()> {
    let rounds = DrainRounds::new(env, stores, SIDES, sizes.drain_events).await?;
    let (per_round, total) = (rounds.per_round, rounds.total());
    let channels = raw_sweep::CHANNELS.iter().copied().max().unwrap_or(1);
    let raw = RawPublisher::connect_channels(&env.amqp_url, channels).await?;
    let raw_envelopes = envelopes(queues[0], per_round)?;
    let mut sweep = Sweep::default();
    // The transport alone, without the store: where the relay's time goes.
    let relay_options = default_options();
    let transport =
        RabbitPublisher::new(env.amqp("tidings-bench-transport"), relay_options.1.clone());
    let transport_envelopes = envelopes(queues[1], per_round)?;
    // The transport opens its connection and finds its exchange untimed,
    // as each relay does in `relay`.
    transport.publish(&transport_envelopes[0]).await?;
    let window = sizes.batch_size;
    let narrow_options = (
        RelayOptions::default()
            .batch_size(sizes.wide_claim)
            .publish_window(window),
        PublisherOptions::default().confirm_channels(1),
    );
    let sides = [
        (queues[2], "tidings-bench-relay", relay_options.clone()),
        (queues[3], "tidings-bench-relay-narrow", narrow_options),
    ];
    let mut relays = Vec::new();
    for (store, (queue, name, (options, publisher))) in stores.iter().zip(sides) {
        let publisher = RabbitPublisher::new(env.amqp(name), publisher);
        relays.push(warm_relay(store, publisher, queue, options).await?);
    }
    let mut took = [Duration::ZERO; 4];
    let mut cpu = [CpuTime::default(); 4];
    let mut relayed = [0; 2];
    for (round, &order) in rounds.orders.iter().enumerate() {
        let specs = relays.iter().map(|(spec, _)| *spec);
        rounds.stage(env, stores.iter().zip(specs)).await?;
        for queue in queues {
            raw.purge(queue).await?;
        }
        for side in order {
            let before = CpuTime::now();
            took[side as usize] += match side {
                Side::Raw => sweep.round(&raw, queues[0], &raw_envelopes, round).await?,
                Side::Transport => {
                    let window = relay_options.0.get_batch_size();
                    publish_through(&transport, &transport_envelopes, window).await?
                }
                Side::Relay | Side::NarrowRelay => {
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
    let ceiling = sweep.report(NAME, total, report).value;
    let took = |side: Side| took[side as usize];
    let transport_rate = Figure::rate(NAME, "RabbitPublisher alone", total, took(Side::Transport));
    report(transport_rate.limit(ceiling));
    let (options, publisher) = &relay_options;
    report(
        Figure::rate(
            NAME,
            &format!(
                "relayed events, claims of {} in windows of {} on {} confirm channels (default)",
                options.get_batch_size(),
                options.get_publish_window(),
                publisher.get_confirm_channels(),
            ),
            total,
            took(Side::Relay),
        )
        .limit(ceiling)
        .goal(Goal::RatioAtLeast(0.85)),
    );
    let narrow = Figure::rate(
        NAME,
        &format!(
            "relayed events, claims of {} in windows of {window} on one channel",
            sizes.wide_claim
        ),
        total,
        took(Side::NarrowRelay),
    );
    report(narrow.clone().limit(ceiling));
    let same_window = Setting {
        window,
        channels: 1,
    };
    if let Some(raw_rate) = sweep.rate(same_window, total) {
        let mut narrow = narrow.limit(raw_rate);
        narrow.measure += &format!(" vs raw publishing in windows of {window}");
        report(narrow);
    }
    // The raw side is the whole sweep: its CPU is per message of it.
    let raw_events = total * raw_sweep::WINDOWS.len() * raw_sweep::CHANNELS.len();
    let sides = [
        (Side::Raw, "raw (the whole sweep)", raw_events),
        (Side::Transport, "transport alone", total),
        (Side::Relay, "relay (default)", total),
        (Side::NarrowRelay, "relay, windows of one channel", total),
    ];
    for (side, name, events) in sides {
        report(Figure::cpu_per_thousand(
            NAME,
            name,
            cpu[side as usize],
            events,
        ));
    }
    Ok(())
}

/// The relay's default options, and the transport's.
fn default_options() -> (RelayOptions, PublisherOptions) {
    (RelayOptions::default(), PublisherOptions::default())
}
