//! PostgreSQL outbox → relay → Kafka topic → consumer with the PostgreSQL
//! inbox, all of the test's own: a schema with the outbox, the inbox and a
//! commit log the handler appends to, and a topic with its retry and
//! dead-letter topics.
#![allow(dead_code, unreachable_pub)]

use std::time::{Duration, Instant};

use sqlx::AssertSqlSafe;
use tidings_consumer::{Consumer, ConsumerOptions, HandlerError, TxHandle, handler_fn};
use tidings_core::relay::Relay;
use tidings_core::{Backoff, Message, OutboxSpec, QueueSpec};
use tidings_inbox::Inbox;
use tidings_kafka::{ClientOptions, KafkaPublisher, KafkaSource, PublisherOptions, SourceOptions};
use tidings_postgres::{PgContext, PgOutboxOptions, PgOutboxStore};
use tidings_testing::names::unique_name;
use tidings_testing::services::postgres_pool;
use tokio_util::sync::CancellationToken;

use super::{client, create_topic};

pub use tidings_testing::consumer::Order;

const QUICK: Backoff = Backoff::new(Duration::from_millis(20), Duration::from_millis(200));

/// The outbox store of `schema`.
pub async fn store_in(schema: &str) -> PgOutboxStore {
    let pool = postgres_pool(8).await;
    PgOutboxStore::new(pool, PgOutboxOptions::new().schema(schema.to_owned())).unwrap()
}

/// A schema with the outbox, the inbox and the commit log, and a topic.
pub struct World {
    pub store: PgOutboxStore,
    pub schema: String,
    pub topic: &'static str,
    pub client: ClientOptions,
}

impl World {
    /// On the test broker.
    pub async fn new(partitions: i32) -> Self {
        let topic = leak(create_topic("orders", partitions).await);
        Self::on(client(), topic).await
    }

    /// On the brokers of `client`, whose `topic` exists.
    pub async fn on(client: ClientOptions, topic: &'static str) -> Self {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
        let schema = unique_name("tidings_kafka");
        let store = store_in(&schema).await;
        store.migrate().await.unwrap();
        let create = format!(
            "create table \"{schema}\".commit_log (seq bigserial primary key, \
             key text not null, order_id int not null, member text not null)"
        );
        sqlx::query(AssertSqlSafe(create))
            .execute(store.pool())
            .await
            .unwrap();
        Self {
            store,
            schema,
            topic,
            client,
        }
    }

    /// Stages `orders` events over `keys` ordering keys in a few
    /// transactions and relays them all to the topic.
    pub async fn stage_and_relay(&self, orders: u32, keys: u32) {
        let spec = self.stage(orders, keys).await;
        let publisher = KafkaPublisher::new(&self.client, PublisherOptions::default()).unwrap();
        let relay = Relay::new(self.store.clone(), publisher, spec).unwrap();
        let mut published = 0;
        let deadline = Instant::now() + Duration::from_secs(60);
        while published < orders as usize {
            assert!(Instant::now() < deadline, "relayed only {published}");
            published += relay.drain().await.unwrap().published;
        }
    }

    /// The outbox spec of the world's topic.
    pub fn spec(&self) -> &'static OutboxSpec<Order> {
        Box::leak(Box::new(
            OutboxSpec::json("order-events").destination(self.topic),
        ))
    }

    /// Stages `orders` events over `keys` ordering keys in a few
    /// transactions; returns their outbox spec.
    pub async fn stage(&self, orders: u32, keys: u32) -> &'static OutboxSpec<Order> {
        let spec = self.spec();
        for first in (0..orders).step_by(500) {
            stage_range(&self.store, spec, first..orders.min(first + 500), keys).await;
        }
        spec
    }

    /// A consumer of the world's topic; see [`consumer`].
    pub fn consumer(&self, group: &str, member: &str, pause: Duration) -> impl ConsumerRun {
        consumer(
            &self.client,
            &self.store,
            &self.schema,
            self.topic,
            group,
            member,
            Handling {
                pause,
                poison: None,
            },
        )
    }

    /// `(events with an effect, the most effects one event had)`.
    pub async fn effects(&self) -> (i64, i64) {
        effects(&self.store, &self.schema).await
    }

    /// Effects committed by `member`.
    pub async fn effects_of(&self, member: &str) -> i64 {
        let sql = format!(
            "select count(*) from \"{}\".commit_log where member = $1",
            self.schema
        );
        sqlx::query_scalar(AssertSqlSafe(sql))
            .bind(member)
            .fetch_one(self.store.pool())
            .await
            .unwrap()
    }

    /// Each key's order ids, with the member that handled each, in the
    /// order their effects committed.
    pub async fn logs(&self) -> std::collections::HashMap<String, Vec<(u32, String)>> {
        let sql = format!(
            "select key, order_id, member from \"{}\".commit_log order by seq",
            self.schema
        );
        let rows: Vec<(String, i32, String)> = sqlx::query_as(AssertSqlSafe(sql))
            .fetch_all(self.store.pool())
            .await
            .unwrap();
        let mut logs: std::collections::HashMap<String, Vec<(u32, String)>> = Default::default();
        for (key, id, member) in rows {
            let id = u32::try_from(id).expect("an order id");
            logs.entry(key).or_default().push((id, member));
        }
        logs
    }

    pub async fn drop(self) {
        tidings_testing::services::drop_schema(self.store.pool(), &self.schema).await;
    }
}

/// Stages the orders of `ids` in one transaction, over `keys` ordering
/// keys.
pub async fn stage_range(
    store: &PgOutboxStore,
    spec: &'static OutboxSpec<Order>,
    ids: std::ops::Range<u32>,
    keys: u32,
) {
    let mut ctx = store.begin().await.unwrap();
    for id in ids {
        ctx.outbox()
            .stage(spec, "order.placed", &Order { id })
            .unwrap()
            .ordering_key(format!("k{}", id % keys));
    }
    ctx.commit().await.unwrap();
}

/// `(events with an effect, the most effects one event had)` in `schema`.
pub async fn effects(store: &PgOutboxStore, schema: &str) -> (i64, i64) {
    let sql = format!(
        "select count(distinct order_id), coalesce(max(n), 0) from \
         (select order_id, count(*) as n from \"{schema}\".commit_log group by order_id) counts"
    );
    sqlx::query_as(AssertSqlSafe(sql))
        .fetch_one(store.pool())
        .await
        .unwrap()
}

/// An event whose handler never returns, as one that kills its process.
#[derive(Debug, Clone, Copy)]
pub struct Poison {
    /// The event's order id.
    pub id: u32,
    /// Called when its handler starts.
    pub reached: fn(),
    /// The consumer's `max_deliveries`.
    pub max_deliveries: u32,
}

/// What the handler does beside its effect.
#[derive(Debug, Clone, Copy, Default)]
pub struct Handling {
    /// Work before the effect.
    pub pause: Duration,
    /// An event that never returns.
    pub poison: Option<Poison>,
}

/// A consumer in group `group` whose handler appends each event to the
/// commit log in the inbox's transaction, under `member`.
pub fn consumer(
    client: &ClientOptions,
    store: &PgOutboxStore,
    schema: &str,
    topic: &'static str,
    group: &str,
    member: &str,
    handling: Handling,
) -> impl ConsumerRun {
    let Handling { pause, poison } = handling;
    let source = KafkaSource::new(
        client,
        SourceOptions::new(group.to_owned())
            .commit_interval(Duration::from_millis(100))
            .session_timeout(Duration::from_secs(6))
            .prefetch(64),
    )
    .unwrap();
    let queue: &'static QueueSpec<Order> = Box::leak(Box::new(QueueSpec::json(topic)));
    let insert = format!(
        "insert into \"{schema}\".commit_log (key, order_id, member) values ($1, $2, '{member}')"
    );
    let handler = handler_fn(
        move |msg: Message<Order>, tx: TxHandle<PgContext<'static>>| {
            let insert = insert.clone();
            async move {
                if let Some(poison) = poison.filter(|p| p.id == msg.payload.id) {
                    (poison.reached)();
                    std::future::pending::<()>().await;
                }
                if !pause.is_zero() {
                    tokio::time::sleep(pause).await;
                }
                let mut ctx = tx.lock().await;
                sqlx::query(AssertSqlSafe(insert))
                    .bind(msg.ordering_key().unwrap_or_default())
                    .bind(i64::from(msg.payload.id))
                    .execute(ctx.tx())
                    .await?;
                Ok::<(), HandlerError>(())
            }
        },
    );
    let mut options = options();
    if let Some(poison) = poison {
        options = options.max_deliveries(poison.max_deliveries);
    }
    Consumer::new(source, queue, handler)
        .unwrap()
        .inbox(Inbox::new(store.inbox(), "billing").unwrap())
        .options(options)
}

/// Options with quick retries and restarts.
pub fn options() -> ConsumerOptions {
    ConsumerOptions::default()
        .concurrency(8)
        .retry_backoff(QUICK)
        .restart_backoff(QUICK)
        .shutdown_timeout(Duration::from_secs(10))
}

/// A consumer of these tests, whatever its handler type.
pub trait ConsumerRun: Send + Sync + 'static {
    fn run_to(self, cancel: CancellationToken) -> impl std::future::Future<Output = ()> + Send;
}

impl<H> ConsumerRun
    for Consumer<KafkaSource, Order, tidings_core::JsonCodec, H, tidings_postgres::PgInboxStore>
where
    H: tidings_consumer::Handler<Order, PgContext<'static>>,
{
    async fn run_to(self, cancel: CancellationToken) {
        self.run(cancel).await;
    }
}

pub fn leak(text: String) -> &'static str {
    Box::leak(text.into_boxed_str())
}
