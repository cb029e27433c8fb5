//! The consumer runner with the MongoDB inbox on a real RabbitMQ queue:
//! the consumer suite of `tidings-testing`, with the broker closing the
//! connection.

use std::time::Duration;

use crate::support::{drop_collections, store};
use mongodb::Collection;
use mongodb::bson::{Document, doc};
use tidings_consumer::{HandlerError, StoredInbox, TxHandle};
use tidings_core::{Backoff, Envelope, PublisherExt, QueueSpec};
use tidings_inbox::Inbox;
use tidings_mongo::{MongoContext, MongoInboxStore, MongoOutboxStore, Retention};
use tidings_rabbitmq::{
    ConnectionOptions, PublisherOptions, QueueOptions, RabbitPublisher, RabbitSource,
    SourceOptions, Topology,
};
use tidings_testing::consumer::{ConnectionFaults, ConsumerWorld, Effects, Order};
use tidings_testing::faults::close_rabbitmq_connection;
use tidings_testing::names::unique_name;
use tidings_testing::services::{amqp_url, service_missing};

const QUICK: Backoff = Backoff::new(Duration::from_millis(20), Duration::from_millis(200));

/// A MongoDB store with an effects collection, and a RabbitMQ queue of
/// the case's own.
struct MongoRabbit {
    store: MongoOutboxStore,
    effects: Collection<Document>,
    queue: String,
    publisher: RabbitPublisher,
    connection_name: String,
    /// Where its consumers keep what they receive, when they keep it in
    /// collections of its own rather than on the broker.
    kept: Option<MongoOutboxStore>,
}

impl MongoRabbit {
    async fn new() -> Self {
        let store = store(Retention::Delete).await;
        let effects = store
            .database()
            .collection(&format!("{}_effects", store.outbox().name()));
        let queue = unique_name("orders");
        let amqp = amqp_url();
        let options = QueueOptions::quorum().expires(Duration::from_secs(120));
        Topology::new(ConnectionOptions::new(amqp.clone()))
            .declare_queue(&queue, options)
            .await
            .unwrap_or_else(|e| service_missing("RabbitMQ", &amqp, &e));
        let publisher = RabbitPublisher::new(
            ConnectionOptions::new(amqp).reconnect_backoff(QUICK),
            PublisherOptions::default(),
        );
        Self {
            store,
            effects,
            queue,
            publisher,
            connection_name: unique_name("tidings-mongo-consumer"),
            kept: None,
        }
    }

    /// A world whose consumers keep what they receive in a stored inbox
    /// on collections of their own.
    async fn stored() -> Self {
        Self {
            kept: Some(store(Retention::Delete).await),
            ..Self::new().await
        }
    }
}

impl ConsumerWorld for MongoRabbit {
    type Source = RabbitSource;
    type Inbox = MongoInboxStore;
    type Kept = MongoOutboxStore;

    fn kept(&self) -> Option<StoredInbox<MongoOutboxStore>> {
        self.kept
            .clone()
            .map(tidings_testing::consumer::quick_stored)
    }

    fn source(&self) -> RabbitSource {
        let connection = ConnectionOptions::new(amqp_url())
            .connection_name(self.connection_name.clone())
            .reconnect_backoff(QUICK);
        RabbitSource::new(connection, SourceOptions::default().prefetch(16))
    }

    fn queue(&self) -> QueueSpec<Order> {
        QueueSpec::json_named(self.queue.clone())
    }

    fn inbox(&self) -> Inbox<MongoInboxStore> {
        Inbox::new(self.store.inbox(), "billing").unwrap()
    }

    async fn publish(&self, envelope: &Envelope) {
        self.publisher.publish(envelope).await.expect("publish");
    }

    async fn apply(&self, tx: &TxHandle<MongoContext>, id: u32) -> Result<(), HandlerError> {
        let mut tx = tx.lock().await;
        self.effects
            .update_one(doc! { "_id": id }, doc! { "$inc": { "count": 1 } })
            .upsert(true)
            .session(tx.session())
            .await?;
        Ok(())
    }

    async fn effects(&self) -> Effects {
        let mut orders = 0;
        let mut most = 0;
        let mut cursor = self.effects.find(doc! {}).await.unwrap();
        while cursor.advance().await.unwrap() {
            let count = cursor
                .deserialize_current()
                .unwrap()
                .get_i32("count")
                .unwrap();
            orders += 1;
            most = most.max(u64::try_from(count).unwrap());
        }
        Effects { orders, most }
    }

    async fn teardown(&self) {
        self.effects.drop().await.unwrap();
        drop_collections(&self.store).await;
        if let Some(kept) = &self.kept {
            drop_collections(kept).await;
        }
    }
}

impl ConnectionFaults for MongoRabbit {
    async fn lose_connection(&self) {
        close_rabbitmq_connection(&self.connection_name).await;
    }
}

tidings_testing::consumer_conformance!(MongoRabbit::new(); with_connection_faults, with_give_up);

mod stored {
    use super::*;
    tidings_testing::consumer_conformance!(MongoRabbit::stored(); with_connection_faults, with_give_up);
}
