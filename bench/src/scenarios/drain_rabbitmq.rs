//! drain-rabbitmq: a backlog relayed to RabbitMQ (persistent, confirmed),
//! against lapin publishing the same messages with a confirm window of the
//! relay's batch size. The backlog is staged and drained in rounds, each
//! alternating with the raw publishing of the same number of messages and
//! with the transport publishing them alone.
//!
//! Each side publishes into a queue of its own, emptied before every round,
//! on a connection opened before the clock starts, and each round runs the
//! sides in another of their six orders, so none meets a deeper queue, a
//! colder connection or a busier moment than the others.

use std::time::{Duration, Instant};

use tidings_core::relay::{Relay, RelayConfig};
use tidings_core::{Envelope, Publisher};
use tidings_postgres::{PgOutboxStore, Retention};
use tidings_rabbitmq::{PublisherOptions, RabbitPublisher};

use crate::args::Sizes;
use crate::env::{Env, spec};
use crate::load::stage_pending;
use crate::payload::envelopes;
use crate::raw_publish::RawPublisher;
use crate::report::{Figure, Goal};

const NAME: &str = "drain-rabbitmq";

/// Rounds each side runs, alternating, so that a change in the machine's
/// load falls on all of them: one per order of the sides.
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
    ];
    let store = env.store("drain_rabbit", Retention::Delete).await?;
    let result = measure(env, sizes, &store, queues, report).await;
    env.drop_store(&store).await?;
    for queue in queues {
        env.drop_queue(queue).await?;
    }
    result
}

/// The three sides, in the order of their queues.
#[derive(Debug, Clone, Copy)]
enum Side {
    Raw,
    Transport,
    Relay,
}

/// Every order of the sides: over six rounds each goes first, second and
/// last twice, and follows each of the others equally often.
const ORDERS: [[Side; 3]; 6] = {
    use Side::{Raw, Relay, Transport};
    [
        [Raw, Transport, Relay],
        [Relay, Transport, Raw],
        [Transport, Relay, Raw],
        [Raw, Relay, Transport],
        [Relay, Raw, Transport],
        [Transport, Raw, Relay],
    ]
};

async fn measure(
    env: &Env,
    sizes: &Sizes,
    store: &PgOutboxStore,
    queues: [&'static str; 3],
    report: &mut dyn FnMut(Figure),
) -> anyhow::Result<()> {
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
    let spec = spec(queues[2]);
    let publisher =
        RabbitPublisher::new(env.amqp("tidings-bench-relay"), PublisherOptions::default());
    // Both transport connections open, and find their exchange, untimed.
    let warm = envelopes(queues[2], 1)?;
    transport.publish(&transport_envelopes[0]).await?;
    publisher.publish(&warm[0]).await?;
    let relay = Relay::new(store.clone(), publisher, spec)?
        .config(RelayConfig::default().batch_size(sizes.batch_size));
    let mut took = [Duration::ZERO; 3];
    let mut relayed = 0;
    for order in ORDERS {
        stage_pending(store, spec, per_round).await?;
        env.vacuum(store).await?;
        for queue in queues {
            raw.purge(queue).await?;
        }
        for side in order {
            took[side as usize] += match side {
                Side::Raw => raw.publish_all(&raw_envelopes, sizes.batch_size).await?,
                Side::Transport => {
                    publish_through(&transport, &transport_envelopes, sizes.batch_size).await?
                }
                Side::Relay => {
                    let started = Instant::now();
                    relayed += relay.drain().await?.published;
                    started.elapsed()
                }
            };
        }
    }
    anyhow::ensure!(relayed == total, "relayed {relayed} of {total} events");
    let took = |side: Side| took[side as usize];
    let raw_rate = Figure::rate(NAME, "raw confirmed publishing", total, took(Side::Raw));
    report(raw_rate.clone());
    let transport_rate = Figure::rate(NAME, "RabbitPublisher alone", total, took(Side::Transport));
    report(transport_rate.limit(raw_rate.value));
    report(
        Figure::rate(NAME, "relayed events", relayed, took(Side::Relay))
            .limit(raw_rate.value)
            .goal(Goal::RatioAtLeast(0.85)),
    );
    Ok(())
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
