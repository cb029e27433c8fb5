//! What the PostgreSQL and RabbitMQ tests that are their own harness
//! (`harness = false`, see [`tidings_testing::faults::harnessless`]) share:
//! a store in a schema of their own, and the orders staged and relayed.

use std::time::{Duration, Instant};

use sqlx::AssertSqlSafe;
use tidings_consumer::{Consumer, ConsumerOptions, Handler};
use tidings_core::relay::Relay;
use tidings_core::{OutboxSpec, QueueSpec};
use tidings_inbox::Inbox;
use tidings_postgres::{PgContext, PgOutboxOptions, PgOutboxStore};
use tidings_rabbitmq::{
    ConnectionOptions, PublisherOptions, QueueOptions, RabbitPublisher, RabbitSource,
    SourceOptions, Topology,
};
use tidings_testing::faults::harnessless;
use tidings_testing::names::unique_name;
use tidings_testing::services::{amqp_url, postgres_pool, service_missing};

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

/// A migrated store in a fresh schema named after `prefix`, with an
/// `effects` table of `columns`; returns it and its schema.
pub(crate) async fn store_with_effects(prefix: &str, columns: &str) -> (PgOutboxStore, String) {
    let schema = unique_name(prefix);
    let store = store_in(&schema).await;
    store.migrate().await.unwrap();
    let create = format!("create table \"{schema}\".effects ({columns})");
    sqlx::query(AssertSqlSafe(create))
        .execute(store.pool())
        .await
        .unwrap();
    (store, schema)
}

/// Adds one to an order's effect count in `schema`'s `effects` table
/// (`order_id int primary key, times int not null`), bound to the order
/// id, for a handler's transaction.
pub(crate) fn effect_sql(schema: &str) -> String {
    format!(
        "insert into \"{schema}\".effects (order_id, times) values ($1, 1) \
         on conflict (order_id) do update set times = effects.times + 1"
    )
}

/// Declares `queue` with `options` on the test broker, failing the test
/// with the setup command when RabbitMQ does not answer; returns the
/// topology to delete it with.
pub(crate) async fn declare(queue: &str, options: QueueOptions) -> Topology {
    let amqp = amqp_url();
    let topology = Topology::new(ConnectionOptions::new(amqp.clone()));
    (topology.declare_queue(queue, options).await)
        .unwrap_or_else(|e| service_missing("RabbitMQ", &amqp, &e));
    topology
}

/// What a child process consumes with, from the `<schema> <queue>` its
/// parent passed: the store in that schema, the queue, and a source with
/// `prefetch`.
pub(crate) struct ChildSetup {
    pub(crate) schema: &'static str,
    pub(crate) store: PgOutboxStore,
    pub(crate) queue: &'static QueueSpec<Order>,
    pub(crate) source: RabbitSource,
}

impl ChildSetup {
    /// Reads `config` and connects.
    pub(crate) async fn new(config: &str, prefetch: u16) -> Self {
        let (schema, queue) = config.split_once(' ').expect("<schema> <queue>");
        let options = SourceOptions::default().prefetch(prefetch);
        Self {
            schema: leak(schema.to_owned()),
            store: store_in(schema).await,
            queue: Box::leak(Box::new(QueueSpec::json(leak(queue.to_owned())))),
            source: RabbitSource::new(ConnectionOptions::new(amqp_url()), options),
        }
    }

    /// Runs a consumer of the queue with `handler`, the `billing` inbox
    /// and `options` until the process is terminated.
    pub(crate) async fn consume<H>(self, handler: H, options: ConsumerOptions)
    where
        H: Handler<Order, PgContext<'static>>,
    {
        let inbox = Inbox::new(self.store.inbox(), "billing").unwrap();
        let consumer = Consumer::new(self.source, self.queue, handler)
            .unwrap()
            .inbox(inbox)
            .options(options);
        consumer.run(harnessless::until_terminated()).await;
    }
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
