//! A PostgreSQL inbox and a RabbitMQ queue of the test's own, and a handler
//! that counts each order's effects in a table beside the inbox.
#![allow(dead_code)]

use std::time::Duration;

use sqlx::AssertSqlSafe;
use tidings_consumer::{
    Consumer, ConsumerOptions, ConsumerReport, Handler, HandlerError, TxHandle,
};
use tidings_core::{Backoff, Envelope, JsonCodec, Message, PublisherExt, QueueSpec};
use tidings_postgres::{PgContext, PgInboxStore, PgOutboxOptions, PgOutboxStore};
use tidings_rabbitmq::{
    ConnectionOptions, PublisherOptions, QueueKind, QueueOptions, RabbitPublisher, RabbitSource,
    SourceOptions, Topology,
};
use tidings_testing::names::unique_name;
use tidings_testing::services::{amqp_url, postgres_pool, service_missing};

pub(crate) use tidings_testing::consumer::Order;

/// Everything one test owns.
pub(crate) struct World {
    pub(crate) store: PgOutboxStore,
    pub(crate) queue: &'static QueueSpec<Order>,
    pub(crate) publisher: RabbitPublisher,
    pub(crate) source: RabbitSource,
    pub(crate) connection_name: String,
    /// Where its consumers keep what they receive, when they keep it in a
    /// table of its own rather than on the broker.
    pub(crate) kept: Option<PgOutboxStore>,
    schema: String,
}

const QUICK: Backoff = Backoff::new(Duration::from_millis(20), Duration::from_millis(200));

impl World {
    pub(crate) async fn new(kind: QueueKind) -> Self {
        let pool = postgres_pool(12).await;
        let schema = unique_name("tidings_consumer");
        let store =
            PgOutboxStore::new(pool, PgOutboxOptions::new().schema(schema.clone())).unwrap();
        store.migrate().await.unwrap();
        let create = format!(
            "create table \"{schema}\".effects (order_id int primary key, times int not null)"
        );
        sqlx::query(AssertSqlSafe(create))
            .execute(store.pool())
            .await
            .unwrap();

        let name: &'static str = Box::leak(unique_name("orders").into_boxed_str());
        let queue: &'static QueueSpec<Order> = Box::leak(Box::new(QueueSpec::json(name)));
        let amqp = amqp_url();
        let options = QueueOptions::classic()
            .kind(kind)
            .expires(Duration::from_secs(120));
        Topology::new(ConnectionOptions::new(amqp.clone()))
            .declare_queue(name, options)
            .await
            .unwrap_or_else(|e| service_missing("RabbitMQ", &amqp, &e));
        let connection_name = unique_name("tidings-consumer-test");
        let connection = ConnectionOptions::new(amqp.clone())
            .connection_name(connection_name.clone())
            .reconnect_backoff(QUICK);
        let publisher = RabbitPublisher::new(
            ConnectionOptions::new(amqp).reconnect_backoff(QUICK),
            PublisherOptions::default(),
        );
        let source = RabbitSource::new(connection, SourceOptions::default().prefetch(16));
        Self {
            store,
            queue,
            publisher,
            source,
            connection_name,
            kept: None,
            schema,
        }
    }

    /// A world whose consumers keep what they receive in a table of the
    /// world's schema, `inbox_messages`.
    pub(crate) async fn stored(kind: QueueKind) -> Self {
        let mut world = Self::new(kind).await;
        let kept = stored_table(&world.store);
        kept.migrate().await.unwrap();
        world.kept = Some(kept);
        world
    }

    pub(crate) fn inbox(&self) -> tidings_inbox::Inbox<PgInboxStore> {
        tidings_inbox::Inbox::new(self.store.inbox(), "billing").unwrap()
    }

    /// Order `id` as an envelope for the test's queue.
    pub(crate) fn envelope(&self, id: u32) -> Envelope {
        tidings_testing::consumer::order_to(self.queue.name(), id, None)
    }

    pub(crate) async fn publish(&self, envelope: &Envelope) {
        self.publisher.publish(envelope).await.expect("publish");
    }

    /// Adds one to the order's effect count in the handler's transaction.
    pub(crate) fn effect_sql(&self) -> String {
        super::staging::effect_sql(&self.schema)
    }

    /// `(orders with an effect, the most effects one order had)`.
    pub(crate) async fn effects(&self) -> (i64, i32) {
        let sql = format!(
            "select count(*), coalesce(max(times), 0) from \"{}\".effects",
            self.schema
        );
        sqlx::query_as(AssertSqlSafe(sql))
            .fetch_one(self.store.pool())
            .await
            .unwrap()
    }

    /// `table` qualified with the test's schema, for SQL.
    pub(crate) fn table(&self, table: &str) -> String {
        format!("\"{}\".{table}", self.schema)
    }

    /// Runs a statement of the test's own on the store's pool.
    pub(crate) async fn execute(&self, sql: String) {
        sqlx::raw_sql(AssertSqlSafe(sql))
            .execute(self.store.pool())
            .await
            .expect("test statement");
    }

    /// A source on the test's queue with `prefetch`, under the test's
    /// connection name.
    pub(crate) fn source_with_prefetch(&self, prefetch: u16) -> RabbitSource {
        let connection = ConnectionOptions::new(amqp_url())
            .connection_name(self.connection_name.clone())
            .reconnect_backoff(QUICK);
        RabbitSource::new(connection, SourceOptions::default().prefetch(prefetch))
    }

    pub(crate) async fn drop(self) {
        self.drop_schema().await;
    }

    /// Drops the test's schema.
    pub(crate) async fn drop_schema(&self) {
        tidings_testing::services::drop_schema(self.store.pool(), &self.schema).await;
    }
}

/// The table beside `store`'s where a stored consumer keeps what it
/// receives, `inbox_messages` in the same schema, on the same pool; not
/// migrated.
pub(crate) fn stored_table(store: &PgOutboxStore) -> PgOutboxStore {
    let options = store
        .options()
        .clone()
        .table("inbox_messages")
        .inbox_table("inbox_messages_marks");
    PgOutboxStore::new(store.pool().clone(), options).unwrap()
}

/// Applies one order's effect through the inbox's transaction.
pub(crate) async fn apply(
    sql: &str,
    msg: &Message<Order>,
    tx: &TxHandle<PgContext<'static>>,
) -> Result<(), HandlerError> {
    let mut ctx = tx.lock().await;
    sqlx::query(AssertSqlSafe(sql.to_owned()))
        .bind(i64::from(msg.payload.id))
        .execute(ctx.tx())
        .await?;
    Ok(())
}

/// Options with quick retries and restarts.
pub(crate) fn options() -> ConsumerOptions {
    ConsumerOptions::default()
        .retry_backoff(QUICK)
        .restart_backoff(QUICK)
        .shutdown_timeout(Duration::from_secs(10))
}

/// Runs the consumer in the background until `done` holds of its report
/// so far, for at most 30 s; returns its report.
pub(crate) async fn run_until<H, F, Fut>(
    consumer: Consumer<RabbitSource, Order, JsonCodec, H, PgInboxStore>,
    done: F,
) -> ConsumerReport
where
    H: Handler<Order, PgContext<'static>>,
    F: Fn(ConsumerReport) -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    tidings_testing::consumer::run_for(consumer, Duration::from_secs(30), done).await
}
