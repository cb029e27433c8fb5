//! What the PostgreSQL and RabbitMQ tests that are their own harness
//! (`harness = false`, see [`tidings_testing::faults::harnessless`]) share:
//! a store in a schema of their own, and the orders staged and relayed.

use std::time::{Duration, Instant};

use tidings_core::OutboxSpec;
use tidings_core::relay::Relay;
use tidings_postgres::{PgOutboxOptions, PgOutboxStore};
use tidings_rabbitmq::{ConnectionOptions, PublisherOptions, RabbitPublisher};
use tidings_testing::services::{amqp_url, postgres_pool};

use super::postgres_rabbitmq::Order;

/// `text` for the rest of the process, for the specs' `&'static str`s.
pub(crate) fn leak(text: String) -> &'static str {
    Box::leak(text.into_boxed_str())
}

/// A store on the test database in `schema`.
pub(crate) async fn store_in(schema: &str) -> PgOutboxStore {
    let pool = postgres_pool(8).await;
    PgOutboxStore::new(pool, PgOutboxOptions::new().schema(schema.to_owned())).unwrap()
}

/// Stages orders `0..count` of `spec`, order `id` under key `k{id % keys}`,
/// 250 to a transaction.
pub(crate) async fn stage_orders(
    store: &PgOutboxStore,
    spec: &'static OutboxSpec<Order>,
    count: u32,
    keys: u32,
) {
    for chunk in (0..count).collect::<Vec<_>>().chunks(250) {
        let mut ctx = store.begin().await.unwrap();
        for id in chunk {
            ctx.outbox()
                .stage(spec, "order.placed", &Order { id: *id })
                .unwrap()
                .ordering_key(format!("k{}", id % keys));
        }
        ctx.commit().await.unwrap();
    }
}

/// Relays `count` staged events of `spec` to RabbitMQ, within `within`.
pub(crate) async fn relay_every(
    store: PgOutboxStore,
    spec: &'static OutboxSpec<Order>,
    count: u32,
    within: Duration,
) {
    let publisher = RabbitPublisher::new(
        ConnectionOptions::new(amqp_url()),
        PublisherOptions::default(),
    );
    let relay = Relay::new(store, publisher, spec).unwrap();
    let mut published = 0;
    let deadline = Instant::now() + within;
    while published < count as usize {
        assert!(Instant::now() < deadline, "relayed only {published}");
        published += relay.drain().await.unwrap().published;
    }
}
