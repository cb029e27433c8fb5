//! The consumer runner on SQS with the PostgreSQL inbox: the consumer
//! suite of `tidings-testing`, on a standard queue, and on a FIFO queue for
//! order within a key.

use crate::support::{VISIBILITY, client, declare, queue_name, source_options};
use tidings_consumer::{HandlerError, TxHandle};
use tidings_core::{Envelope, PublisherExt, QueueSpec};
use tidings_inbox::Inbox;
use tidings_postgres::sqlx::{self, AssertSqlSafe};
use tidings_postgres::{PgContext, PgInboxStore, PgOutboxOptions, PgOutboxStore};
use tidings_sqs::{PublisherOptions, QueueOptions, SqsPublisher, SqsSource};
use tidings_testing::consumer::{ConsumerWorld, Effects, Order};
use tidings_testing::names::unique_name;
use tidings_testing::services::postgres_pool;

/// A PostgreSQL schema with an effects table, and an SQS queue of the
/// case's own.
struct PgSqs {
    store: PgOutboxStore,
    schema: String,
    queue: String,
    publisher: SqsPublisher,
    source: SqsSource,
}

impl PgSqs {
    async fn new(fifo: bool) -> Self {
        let pool = postgres_pool(12).await;
        let schema = unique_name("tidings_sqs_consumer");
        let options = PgOutboxOptions::new().schema(schema.clone());
        let store = PgOutboxStore::new(pool, options).unwrap();
        store.migrate().await.unwrap();
        let create = format!(
            "create table \"{schema}\".effects (order_id int primary key, times int not null)"
        );
        sqlx::query(AssertSqlSafe(create))
            .execute(store.pool())
            .await
            .unwrap();

        let client = client().await;
        let queue = queue_name("orders", fifo);
        let options = QueueOptions::default()
            .max_receive_count(100)
            .visibility_timeout(VISIBILITY);
        declare(&client, &queue, options).await;
        Self {
            store,
            schema,
            queue,
            publisher: SqsPublisher::new(client.clone(), PublisherOptions::default()),
            source: SqsSource::new(client, source_options()),
        }
    }
}

impl ConsumerWorld for PgSqs {
    type Source = SqsSource;
    type Inbox = PgInboxStore;

    fn source(&self) -> SqsSource {
        self.source.clone()
    }

    fn queue(&self) -> QueueSpec<Order> {
        QueueSpec::json_named(self.queue.clone())
    }

    fn inbox(&self) -> Inbox<PgInboxStore> {
        Inbox::new(self.store.inbox(), "billing").unwrap()
    }

    async fn publish(&self, envelope: &Envelope) {
        self.publisher.publish(envelope).await.expect("publish");
    }

    async fn apply(&self, tx: &TxHandle<PgContext<'static>>, id: u32) -> Result<(), HandlerError> {
        let sql = format!(
            "insert into \"{}\".effects (order_id, times) values ($1, 1) \
             on conflict (order_id) do update set times = effects.times + 1",
            self.schema
        );
        let mut ctx = tx.lock().await;
        sqlx::query(AssertSqlSafe(sql))
            .bind(i32::try_from(id).expect("a small order id"))
            .execute(ctx.tx())
            .await?;
        Ok(())
    }

    async fn effects(&self) -> Effects {
        let sql = format!(
            "select count(*), coalesce(max(times), 0) from \"{}\".effects",
            self.schema
        );
        let (orders, most): (i64, i32) = sqlx::query_as(AssertSqlSafe(sql))
            .fetch_one(self.store.pool())
            .await
            .unwrap();
        Effects {
            orders: orders as u64,
            most: most as u64,
        }
    }

    async fn teardown(&self) {
        let sql = format!("drop schema if exists \"{}\" cascade", self.schema);
        sqlx::query(AssertSqlSafe(sql))
            .execute(self.store.pool())
            .await
            .unwrap();
    }
}

mod standard {
    use super::PgSqs;
    tidings_testing::consumer_conformance!(PgSqs::new(false); cases:
        a_message_delivered_three_times_has_its_effect_once,
        a_failing_handler_leaves_nothing_and_succeeds_on_redelivery,
        a_permanent_error_parks_at_once_and_leaves_nothing,
        poison_is_parked_and_does_not_block_the_queue,
        shutdown_under_load_then_restart_applies_every_message_once,
    );
}

/// A standard queue does not keep order; a FIFO queue keeps it per
/// message group, the ordering key.
mod fifo {
    use super::PgSqs;
    tidings_testing::consumer_conformance!(PgSqs::new(true); cases:
        per_key_messages_run_one_at_a_time_in_order,
    );
}
