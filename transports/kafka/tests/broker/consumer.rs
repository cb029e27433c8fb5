//! The consumer runner on Kafka with the PostgreSQL inbox: the consumer
//! suite of `tidings-testing`, each case on a topic and a consumer group
//! of its own. One partition keeps the records of a key in order, as the
//! partitioner does for a key on any number of partitions.

use tidings_consumer::{HandlerError, TxHandle};
use tidings_core::{Envelope, PublisherExt, QueueSpec};
use tidings_inbox::Inbox;
use tidings_kafka::{KafkaPublisher, KafkaSource, PublisherOptions};
use tidings_postgres::{PgContext, PgInboxStore, PgOutboxOptions, PgOutboxStore};
use tidings_testing::consumer::{ConsumerWorld, Effects, Order, PgEffects};
use tidings_testing::names::unique_name;
use tidings_testing::services::postgres_pool;

use crate::support::{client, create_topic, group};

/// A PostgreSQL schema with the inbox and an effects table, and a topic.
struct PgKafka {
    store: PgOutboxStore,
    effects: PgEffects,
    topic: String,
    publisher: KafkaPublisher,
    source: KafkaSource,
}

impl PgKafka {
    async fn new() -> Self {
        let pool = postgres_pool(12).await;
        let schema = unique_name("kafka_consumer");
        let options = PgOutboxOptions::new().schema(schema.clone());
        let store = PgOutboxStore::new(pool.clone(), options).unwrap();
        store.migrate().await.unwrap();
        let topic = create_topic("orders", 1).await;
        Self {
            store,
            effects: PgEffects::create(pool, &schema).await,
            topic,
            publisher: KafkaPublisher::new(&client(), PublisherOptions::default()).unwrap(),
            source: KafkaSource::new(&client(), group("consumer")).unwrap(),
        }
    }
}

impl ConsumerWorld for PgKafka {
    type Source = KafkaSource;
    type Inbox = PgInboxStore;
    type Kept = tidings_postgres::PgOutboxStore;

    fn source(&self) -> KafkaSource {
        self.source.clone()
    }

    fn queue(&self) -> QueueSpec<Order> {
        QueueSpec::json_named(self.topic.clone())
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

// The suite's shutdown-and-restart case stops the first member 400 ms
// after it subscribed, while it is still joining the group; it leaves in
// about 3 s, and the next member of the group then gets no partition for
// over a minute on the test broker. Stopping members that had joined is
// covered by `restart.rs` and `rebalance.rs`.
tidings_testing::consumer_conformance!(PgKafka::new(); cases:
    a_message_delivered_three_times_has_its_effect_once,
    a_failing_handler_leaves_nothing_and_succeeds_on_redelivery,
    a_permanent_error_parks_at_once_and_leaves_nothing,
    poison_is_parked_and_does_not_block_the_queue,
    per_key_messages_run_one_at_a_time_in_order,
);
