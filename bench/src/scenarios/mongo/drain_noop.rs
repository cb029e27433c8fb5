//! mongo-drain-noop: a backlog relayed to a publisher that does nothing
//! by the relay on the `tidings-mongo` store, against the leanest claim
//! and delete loop the raw driver allows with the same batch size (see
//! [`raw_drain`]).

use std::time::{Duration, Instant};

use futures::TryStreamExt;
use tidings_core::OutboxSpec;
use tidings_core::relay::Relay;
use tidings_mongo::MongoOutboxStore;
use tidings_mongo::mongodb::bson::spec::BinarySubtype;
use tidings_mongo::mongodb::bson::{Binary, Bson, Document, doc};
use uuid::Uuid;

use crate::env::spec;
use crate::load::stage_pending;
use crate::payload::Payload;
use crate::publishers::NoopPublisher;
use crate::report::{Figure, Goal, Report};
use crate::sizes::Sizes;

use super::documents::now_micros;
use super::services::{database, drop_store, store};

const NAME: &str = "mongo-drain-noop";

pub(in crate::scenarios) async fn run(sizes: &Sizes, report: Report<'_>) -> anyhow::Result<()> {
    let database = database().await?;
    let raw = store(&database, "drain_raw").await?;
    let relayed = store(&database, "drain").await?;
    let result = async {
        let spec = spec("bench-mongo-drain");
        for store in [&raw, &relayed] {
            stage_pending(store, spec, sizes.mongo_events).await?;
        }
        let (moved, took) = raw_drain(&raw, spec, sizes.batch_size).await?;
        let raw_rate = Figure::rate(NAME, "raw find + claim + delete loop", moved, took);
        report(raw_rate.clone());
        let relay =
            Relay::new(relayed.clone(), NoopPublisher, spec)?.options(sizes.relay_options());
        let started = Instant::now();
        let drained = relay.drain().await?;
        let took = started.elapsed();
        anyhow::ensure!(
            drained.published == sizes.mongo_events,
            "relayed {} of {} events",
            drained.published,
            sizes.mongo_events
        );
        report(
            Figure::rate(NAME, "relayed events", drained.published, took)
                .limit(raw_rate.value)
                .goal(Goal::RatioAtLeast(0.6)),
        );
        Ok(())
    }
    .await;
    drop_store(&raw).await?;
    drop_store(&relayed).await?;
    result
}

/// The raw limit, in three round trips a batch: read the oldest due
/// pending documents whole, stamp a lease on those still pending (the
/// claim: a document another claimer stamped first no longer matches),
/// and, the batch handed over, delete what the lease holds. Only when the
/// stamp took fewer than it read does it read the batch again by lease.
/// Returns the documents moved and the time taken.
async fn raw_drain(
    store: &MongoOutboxStore,
    spec: &OutboxSpec<Payload>,
    batch_size: usize,
) -> anyhow::Result<(usize, Duration)> {
    let outbox = store.outbox();
    let started = Instant::now();
    let mut moved = 0;
    loop {
        let now = now_micros();
        let due =
            doc! { "route": spec.name(), "status": "pending", "available_at_us": { "$lte": now } };
        let read: Vec<Document> = outbox
            .find(due)
            .sort(doc! { "seq": 1 })
            .limit(batch_size as i64)
            .await?
            .try_collect()
            .await?;
        let read_len = read.len();
        let ids: Vec<Bson> = read.iter().filter_map(|d| d.get("_id").cloned()).collect();
        let lease = Bson::Binary(Binary {
            subtype: BinarySubtype::Uuid,
            bytes: Uuid::new_v4().as_bytes().to_vec(),
        });
        let stamp = doc! { "$set": {
            "status": "in_flight",
            "lease": lease.clone(),
            "lease_expires_at_us": now + 30_000_000,
        }};
        let still = doc! { "_id": { "$in": ids }, "status": "pending" };
        let stamped = outbox.update_many(still, stamp).await?.modified_count as usize;
        let claimed = match stamped == read_len {
            true => read,
            false => {
                let held = outbox.find(doc! { "lease": lease.clone() }).await?;
                held.try_collect().await?
            }
        };
        for d in &claimed {
            // What a hand-written relay reads to publish.
            let _message = (
                d.get("event_id"),
                d.get_str("event_type")?,
                d.get("payload"),
            );
        }
        outbox.delete_many(doc! { "lease": lease }).await?;
        moved += claimed.len();
        if read_len < batch_size {
            return Ok((moved, started.elapsed()));
        }
    }
}
