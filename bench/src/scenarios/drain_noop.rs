//! drain-noop: a backlog relayed to a publisher that does nothing, against
//! a bare claim-and-delete loop in plain SQL with the same batch size.

use tidings_core::relay::{Relay, RelayConfig};
use tidings_postgres::Retention;

use crate::args::Sizes;
use crate::env::{Env, spec};
use crate::load::stage_pending;
use crate::publishers::NoopPublisher;
use crate::raw_drain;
use crate::report::{Figure, Goal};

const NAME: &str = "drain-noop";

pub(super) async fn run(
    env: &Env,
    sizes: &Sizes,
    report: &mut dyn FnMut(Figure),
) -> anyhow::Result<()> {
    let raw = env.store("drain_raw", Retention::Delete).await?;
    let tidings = env.store("drain", Retention::Delete).await?;
    let result = async {
        let spec = spec("bench-drain");
        stage_pending(&raw, spec, sizes.drain_events).await?;
        stage_pending(&tidings, spec, sizes.drain_events).await?;
        env.vacuum(&raw).await?;
        env.vacuum(&tidings).await?;
        let (raw_moved, raw_took) = raw_drain::drain(&raw, spec, sizes.batch_size).await?;
        let relay = Relay::new(tidings.clone(), NoopPublisher, spec)?
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
        let raw_rate = Figure::rate(NAME, "raw claim + delete loop", raw_moved, raw_took);
        report(raw_rate.clone());
        report(
            Figure::rate(NAME, "relayed events", drained.published, took)
                .limit(raw_rate.value)
                .goal(Goal::RatioAtLeast(0.6)),
        );
        Ok(())
    }
    .await;
    env.drop_store(&raw).await?;
    env.drop_store(&tidings).await?;
    result
}
