//! The consumer runner on SQS with the PostgreSQL inbox: the consumer
//! suite of `tidings-testing`, on a standard queue, and on a FIFO queue for
//! order within a key.

use crate::support::{VISIBILITY, client, declare, queue_name, source_options};
use tidings_consumer::{HandlerError, TxHandle};
use tidings_core::{Envelope, PublisherExt, QueueSpec};
use tidings_inbox::Inbox;
use tidings_postgres::{PgContext, PgInboxStore, PgOutboxOptions, PgOutboxStore};
use tidings_sqs::{PublisherOptions, QueueOptions, SqsPublisher, SqsSource};
use tidings_testing::consumer::{ConsumerWorld, Effects, Order, PgEffects};
use tidings_testing::names::unique_name;
use tidings_testing::services::postgres_pool;

/// A PostgreSQL schema with the inbox and an effects table, and an SQS
/// queue of the case's own.
struct PgSqs {
    store: PgOutboxStore,
    effects: PgEffects,
    queue: String,
    publisher: SqsPublisher,
    source: SqsSource,
}

impl PgSqs {
    async fn new(fifo: bool) -> Self {
        let pool = postgres_pool(12).await;
        let schema = unique_name("tidings_sqs_consumer");
        let options = PgOutboxOptions::new().schema(schema.clone());
        let store = PgOutboxStore::new(pool.clone(), options).unwrap();
        store.migrate().await.unwrap();

        let client = client().await;
        let queue = queue_name("orders", fifo);
        let options = QueueOptions::default()
            .max_receive_count(100)
            .visibility_timeout(VISIBILITY);
        declare(&client, &queue, options).await;
        Self {
            store,
            effects: PgEffects::create(pool, &schema).await,
            queue,
            publisher: SqsPublisher::new(client.clone(), PublisherOptions::default()),
            source: SqsSource::new(client, source_options()),
        }
    }
}

impl ConsumerWorld for PgSqs {
    type Source = SqsSource;
    type Inbox = PgInboxStore;
    type Kept = tidings_postgres::PgOutboxStore;

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
        let mut ctx = tx.lock().await;
        self.effects.apply(id).execute(ctx.tx()).await?;
        Ok(())
    }

    async fn effects(&self) -> Effects {
        self.effects.effects().await
    }

    async fn teardown(&self) {
        self.effects.drop_schema().await;
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
