//! drain-rabbitmq: a backlog relayed to RabbitMQ (persistent, confirmed),
//! against lapin publishing the same messages with a confirm window of the
//! relay's batch size.

use tidings_core::Publisher;
use tidings_core::relay::{Relay, RelayConfig};
use tidings_postgres::Retention;
use tidings_rabbitmq::{PublisherOptions, RabbitPublisher};

use crate::args::Sizes;
use crate::env::{Env, spec};
use crate::load::stage_pending;
use crate::payload::envelopes;
use crate::raw_publish::RawPublisher;
use crate::report::{Figure, Goal};

const NAME: &str = "drain-rabbitmq";

pub(super) async fn run(
    env: &Env,
    sizes: &Sizes,
    report: &mut dyn FnMut(Figure),
) -> anyhow::Result<()> {
    let raw_queue = env.queue("bench-drain-raw").await?;
    let queue = env.queue("bench-drain").await?;
    let store = env.store("drain_rabbit", Retention::Delete).await?;
    let result = async {
        let publisher = RawPublisher::connect(&env.amqp_url).await?;
        let envelopes = envelopes(raw_queue, sizes.drain_events)?;
        let raw_took = publisher.publish_all(&envelopes, sizes.batch_size).await?;
        let raw_rate = Figure::rate(
            NAME,
            "raw confirmed publishing",
            sizes.drain_events,
            raw_took,
        );
        report(raw_rate.clone());
        // The transport alone, without the store: where the relay's time goes.
        let transport = RabbitPublisher::new(
            env.amqp("tidings-bench-transport"),
            PublisherOptions::default(),
        );
        let started = std::time::Instant::now();
        for chunk in envelopes.chunks(sizes.batch_size) {
            for result in transport.publish_batch(chunk).await {
                result?;
            }
        }
        report(
            Figure::rate(
                NAME,
                "RabbitPublisher alone",
                sizes.drain_events,
                started.elapsed(),
            )
            .limit(raw_rate.value),
        );
        drop(envelopes);

        let spec = spec(queue);
        stage_pending(&store, spec, sizes.drain_events).await?;
        env.vacuum(&store).await?;
        let publisher =
            RabbitPublisher::new(env.amqp("tidings-bench-relay"), PublisherOptions::default());
        let relay = Relay::new(store.clone(), publisher, spec)?
            .config(RelayConfig::default().batch_size(sizes.batch_size));
        let started = std::time::Instant::now();
        let drained = relay.drain().await?;
        let took = started.elapsed();
        anyhow::ensure!(
            drained.published == sizes.drain_events,
            "relayed {} of {} events",
            drained.published,
            sizes.drain_events
        );
        report(
            Figure::rate(NAME, "relayed events", drained.published, took)
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
