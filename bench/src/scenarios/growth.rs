//! growth: the drain-noop backlog relayed from a table that keeps its
//! published rows (a million by default), against the same backlog in an
//! empty table. Both stores keep published rows, so both drains write the
//! same way.

use std::time::Instant;

use tidings_core::relay::{Relay, RelayConfig};
use tidings_postgres::{PgOutboxStore, Retention};

use crate::args::Sizes;
use crate::env::{Env, spec};
use crate::load::{insert_published, stage_pending};
use crate::publishers::NoopPublisher;
use crate::report::{Figure, Goal};

const NAME: &str = "growth";

pub(super) async fn run(
    env: &Env,
    sizes: &Sizes,
    report: &mut dyn FnMut(Figure),
) -> anyhow::Result<()> {
    let empty = env.store("growth_empty", Retention::Keep).await?;
    let full = env.store("growth_full", Retention::Keep).await?;
    let result = async {
        let spec = spec("bench-growth");
        insert_published(&full, spec, sizes.growth_retained).await?;
        for store in [&empty, &full] {
            stage_pending(store, spec, sizes.drain_events).await?;
            env.vacuum(store).await?;
        }
        let empty_rate = drain(&empty, spec, sizes, "relayed events, empty table").await?;
        report(empty_rate.clone());
        let label = format!(
            "relayed events, {} published rows kept",
            sizes.growth_retained
        );
        let full_rate = drain(&full, spec, sizes, &label).await?;
        report(
            full_rate
                .limit(empty_rate.value)
                .goal(Goal::RatioAtLeast(0.9)),
        );
        Ok(())
    }
    .await;
    env.drop_store(&empty).await?;
    env.drop_store(&full).await?;
    result
}

async fn drain(
    store: &PgOutboxStore,
    spec: &'static tidings_core::OutboxSpec<crate::payload::Payload>,
    sizes: &Sizes,
    label: &str,
) -> anyhow::Result<Figure> {
    let relay = Relay::new(store.clone(), NoopPublisher, spec)?
        .config(RelayConfig::default().batch_size(sizes.batch_size));
    let started = Instant::now();
    let drained = relay.drain().await?;
    let took = started.elapsed();
    anyhow::ensure!(
        drained.published == sizes.drain_events,
        "relayed {} of {} events",
        drained.published,
        sizes.drain_events
    );
    Ok(Figure::rate(NAME, label, drained.published, took))
}
