//! mongo-latency: producers commit staged events at steady rates
//! (`--mongo-rates`, for the latency scenario's duration) while a relay woken by the store's watcher (a
//! change stream on the outbox) publishes them; measures commit-to-publish
//! p50 and p99 and counts staged against published. The publisher notes
//! when each event reaches it, so the figure is the relay's own delay.

use std::time::Duration;

use tidings_mongo::MongoOutboxStore;

use crate::env::spec;
use crate::report::{Figure, Report};
use crate::scenarios::woken::{Plan, WokenRelay, produce, warm_up};
use crate::sizes::Sizes;

use super::services::{database, drop_store, store};

const NAME: &str = "mongo-latency";
/// How soon a warm-up event must be published to count the relay as ready.
const WARM_UP_WAIT: Duration = Duration::from_millis(100);
/// How long the relay gets to publish the last events after producing stops.
const SETTLE: Duration = Duration::from_secs(10);

pub(in crate::scenarios) async fn run(sizes: &Sizes, report: Report<'_>) -> anyhow::Result<()> {
    let database = database().await?;
    for &rate in &sizes.mongo_rates {
        let store = store(&database, "latency").await?;
        let result = measure(&store, rate, sizes).await;
        drop_store(&store).await?;
        for figure in result? {
            report(figure);
        }
    }
    Ok(())
}

async fn measure(
    store: &MongoOutboxStore,
    rate: u32,
    sizes: &Sizes,
) -> anyhow::Result<Vec<Figure>> {
    let spec = spec("bench-mongo-latency");
    let relay = WokenRelay::start(store, spec, sizes.batch_size, |wakeup, cancel| {
        store.wakeup_source(wakeup).spawn(cancel)
    })?;
    warm_up(store, spec, relay.publisher(), WARM_UP_WAIT).await?;
    let plan = Plan::new(rate);
    let duration = sizes.latency_duration;
    let run = relay
        .measure(plan, SETTLE, |p| {
            produce(store.clone(), spec, plan, duration, p)
        })
        .await?;
    Ok(run.figures(NAME, plan, ""))
}
