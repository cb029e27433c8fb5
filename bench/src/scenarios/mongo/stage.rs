//! mongo-stage: concurrent transactions, each inserting one business
//! document and staging one event through the store, against the same
//! transactions inserting both documents with the raw driver. The sides
//! alternate in rounds on collections of their own, each going first in
//! half of them.

use std::time::Duration;

use futures::FutureExt;

use tidings_core::OutboxSpec;
use tidings_mongo::MongoOutboxStore;
use tidings_mongo::mongodb::Collection;
use tidings_mongo::mongodb::bson::Document;

use crate::clients::run_clients;
use crate::env::spec;
use crate::payload::Payload;
use crate::report::{Figure, Goal, Report};
use crate::sizes::Sizes;

use super::documents::{order, pending_event};
use super::services::{database, drop_store, orders, store};

const NAME: &str = "mongo-stage";
/// Rounds each side runs, alternating which goes first.
const ROUNDS: usize = 4;
/// The label of an error after which the whole transaction may run again.
const TRANSIENT: &str = "TransientTransactionError";

pub(in crate::scenarios) async fn run(sizes: &Sizes, report: Report<'_>) -> anyhow::Result<()> {
    let database = database().await?;
    let raw = store(&database, "stage_raw").await?;
    let staged = store(&database, "stage").await?;
    let result = rounds(&raw, &staged, sizes).await;
    drop_store(&raw).await?;
    drop_store(&staged).await?;
    let (raw_took, staged_took) = result?;
    let total = sizes.mongo_events.div_ceil(ROUNDS) * ROUNDS;
    let raw_rate = Figure::rate(NAME, "raw two-document transactions", total, raw_took);
    report(raw_rate.clone());
    report(
        Figure::rate(NAME, "staged transactions", total, staged_took)
            .limit(raw_rate.value)
            .goal(Goal::RatioAtLeast(0.95)),
    );
    Ok(())
}

/// The time each side took over all rounds: raw, then staged.
async fn rounds(
    raw: &MongoOutboxStore,
    staged: &MongoOutboxStore,
    sizes: &Sizes,
) -> anyhow::Result<(Duration, Duration)> {
    let (clients, per_round) = (sizes.clients, sizes.mongo_events.div_ceil(ROUNDS));
    let (raw, staged) = (Orders::new(raw), Orders::new(staged));
    let (mut raw_took, mut staged_took) = (Duration::ZERO, Duration::ZERO);
    for round in 0..ROUNDS {
        if round % 2 == 0 {
            raw_took += raw.stage_raw(clients, per_round).await?;
            staged_took += staged.stage_tidings(clients, per_round).await?;
        } else {
            staged_took += staged.stage_tidings(clients, per_round).await?;
            raw_took += raw.stage_raw(clients, per_round).await?;
        }
    }
    Ok((raw_took, staged_took))
}

/// A store's orders collection, and the route its orders' events are
/// staged to: each side's transactions insert an order and its event.
struct Orders {
    store: MongoOutboxStore,
    spec: &'static OutboxSpec<Payload>,
    orders: Collection<Document>,
}

impl Orders {
    fn new(store: &MongoOutboxStore) -> Self {
        Self {
            store: store.clone(),
            spec: spec("bench-mongo-stage"),
            orders: orders(store),
        }
    }

    /// Commits `count` orders from `clients` concurrent clients, each with its
    /// event staged through the store; returns how long it took.
    async fn stage_tidings(&self, clients: usize, count: usize) -> anyhow::Result<Duration> {
        let (store, orders, spec) = (self.store.clone(), self.orders.clone(), self.spec);
        run_clients(clients, count, move |i| {
            let (store, orders) = (store.clone(), orders.clone());
            async move {
                let payload = Payload::new(i as i64);
                // The store's own transaction runner, which runs the whole
                // transaction again when it conflicts.
                store
                    .transaction(|ctx| {
                        let (orders, payload) = (orders.clone(), payload.clone());
                        async move {
                            orders
                                .insert_one(order(&payload))
                                .session(ctx.session())
                                .await?;
                            ctx.outbox().stage(spec, "order.placed", &payload)?;
                            Ok(())
                        }
                        .boxed()
                    })
                    .await?;
                Ok(())
            }
        })
        .await
    }

    /// Commits `count` orders from `clients` concurrent clients, each with its
    /// event inserted by the raw driver; returns how long it took.
    async fn stage_raw(&self, clients: usize, count: usize) -> anyhow::Result<Duration> {
        let spec = self.spec;
        let (client, outbox, orders) = (
            self.store.client().clone(),
            self.store.outbox().clone(),
            self.orders.clone(),
        );
        run_clients(clients, count, move |i| {
            let (client, outbox, orders) = (client.clone(), outbox.clone(), orders.clone());
            async move {
                let payload = Payload::new(i as i64);
                let event = pending_event(spec, &payload)?;
                let mut session = client.start_session().await?;
                // Run again when it conflicts, as the driver's documentation
                // does it.
                loop {
                    session.start_transaction().await?;
                    let ran = async {
                        orders
                            .insert_one(order(&payload))
                            .session(&mut session)
                            .await?;
                        outbox
                            .insert_one(event.clone())
                            .session(&mut session)
                            .await?;
                        session.commit_transaction().await
                    }
                    .await;
                    match ran {
                        Err(e) if e.contains_label(TRANSIENT) => {
                            let _ = session.abort_transaction().await;
                        }
                        other => return Ok(other?),
                    }
                }
            }
        })
        .await
    }
}
