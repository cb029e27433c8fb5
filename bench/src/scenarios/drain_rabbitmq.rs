//! drain-rabbitmq: a backlog relayed to RabbitMQ (persistent, confirmed),
//! against lapin publishing the same messages with a confirm window of the
//! relay's batch size. The backlog is staged and drained in rounds, each
//! alternating with the raw publishing of the same number of messages.

use std::time::{Duration, Instant};

use tidings_core::relay::{Relay, RelayConfig};
use tidings_core::{Envelope, Publisher};
use tidings_postgres::Retention;
use tidings_rabbitmq::{PublisherOptions, RabbitPublisher};

use crate::args::Sizes;
use crate::env::{Env, spec};
use crate::load::stage_pending;
use crate::payload::envelopes;
use crate::raw_publish::RawPublisher;
use crate::report::{Figure, Goal};

const NAME: &str = "drain-rabbitmq";

/// Rounds each side runs, alternating, so that a change in the machine's
/// load falls on all of them.
const ROUNDS: usize = 5;

pub(super) async fn run(
    env: &Env,
    sizes: &Sizes,
    report: &mut dyn FnMut(Figure),
) -> anyhow::Result<()> {
    let raw_queue = env.queue("bench-drain-raw").await?;
    let queue = env.queue("bench-drain").await?;
    let store = env.store("drain_rabbit", Retention::Delete).await?;
    let result = async {
        let per_round = sizes.drain_events.div_ceil(ROUNDS);
        let total = per_round * ROUNDS;
        let raw = RawPublisher::connect(&env.amqp_url).await?;
        let envelopes = envelopes(raw_queue, per_round)?;
        // The transport alone, without the store: where the relay's time goes.
        let transport = RabbitPublisher::new(
            env.amqp("tidings-bench-transport"),
            PublisherOptions::default(),
        );
        let spec = spec(queue);
        let publisher =
            RabbitPublisher::new(env.amqp("tidings-bench-relay"), PublisherOptions::default());
        let relay = Relay::new(store.clone(), publisher, spec)?
            .config(RelayConfig::default().batch_size(sizes.batch_size));
        let (mut raw_took, mut transport_took, mut relay_took) =
            (Duration::ZERO, Duration::ZERO, Duration::ZERO);
        let mut relayed = 0;
        for _ in 0..ROUNDS {
            stage_pending(&store, spec, per_round).await?;
            env.vacuum(&store).await?;
            raw_took += raw.publish_all(&envelopes, sizes.batch_size).await?;
            transport_took += publish_through(&transport, &envelopes, sizes.batch_size).await?;
            let started = Instant::now();
            relayed += relay.drain().await?.published;
            relay_took += started.elapsed();
        }
        anyhow::ensure!(relayed == total, "relayed {relayed} of {total} events");
        let raw_rate = Figure::rate(NAME, "raw confirmed publishing", total, raw_took);
        report(raw_rate.clone());
        report(
            Figure::rate(NAME, "RabbitPublisher alone", total, transport_took)
                .limit(raw_rate.value),
        );
        report(
            Figure::rate(NAME, "relayed events", relayed, relay_took)
                .limit(raw_rate.value)
                .goal(Goal::RatioAtLeast(0.85)),
        );
        Ok(())
    }
    .await;
    env.drop_store(&store).await?;
    env.drop_queue(raw_queue).await?;
    env.drop_queue(queue).await?;
    result
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
