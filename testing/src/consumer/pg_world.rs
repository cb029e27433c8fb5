//! A consumer world on PostgreSQL and any broker: a schema of its own with
//! the inbox and an effects table, and a queue on the broker.

use tidings_consumer::{HandlerError, TxHandle};
use tidings_core::{Envelope, Publisher, PublisherExt, QueueSpec, Source};
use tidings_inbox::Inbox;
use tidings_postgres::{PgContext, PgInboxStore, PgOutboxOptions, PgOutboxStore};

use super::{ConsumerWorld, Effects, Order, PgEffects};
use crate::names::unique_name;
use crate::services::postgres_pool;

/// The consumer suite's world for a broker's publisher `P` and source `S`
/// with the PostgreSQL inbox, each case in a schema of its own.
///
/// ```no_run
/// use tidings_testing::consumer::PgWorld;
/// # async fn world<P, S>(publisher: P, source: S)
/// # where
/// #     P: tidings_core::Publisher,
/// #     S: tidings_core::Source,
/// # {
/// let world = PgWorld::new("orders_consumer", "orders", publisher, source).await;
/// # }
/// ```
pub struct PgWorld<P, S> {
    store: PgOutboxStore,
    effects: PgEffects,
    queue: String,
    publisher: P,
    source: S,
}

impl<P, S> PgWorld<P, S> {
    /// Creates a schema named after `schema_prefix` with the store's tables
    /// and the effects table; `queue` names the broker's queue (or topic),
    /// which `publisher` sends to and `source` reads.
    pub async fn new(
        schema_prefix: &str,
        queue: impl Into<String>,
        publisher: P,
        source: S,
    ) -> Self {
        let pool = postgres_pool(12).await;
        let schema = unique_name(schema_prefix);
        let options = PgOutboxOptions::new().schema(schema.clone());
        let store = PgOutboxStore::new(pool.clone(), options).expect("valid names");
        store.migrate().await.expect("migrate");
        Self {
            store,
            effects: PgEffects::create(pool, &schema).await,
            queue: queue.into(),
            publisher,
            source,
        }
    }
}

impl<P, S> ConsumerWorld for PgWorld<P, S>
where
    P: Publisher,
    S: Source,
{
    type Source = S;
    type Inbox = PgInboxStore;
    type Kept = PgOutboxStore;

    fn source(&self) -> S {
        self.source.clone()
    }

    fn queue(&self) -> QueueSpec<Order> {
        QueueSpec::json_named(self.queue.clone())
    }

    fn inbox(&self) -> Inbox<PgInboxStore> {
        Inbox::new(self.store.inbox(), "billing").expect("a valid consumer name")
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
