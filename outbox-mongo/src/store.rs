//! The MongoDB outbox store: a client, the validated collections and the
//! clocks stamping what it writes.

use std::sync::Arc;
use std::time::SystemTime;

use mongodb::bson::Document;
use mongodb::{Client, ClientSession, Collection, Database};
use tidings_core::staging::KnownRoutes;
use tidings_core::{HybridClock, OutboxBuffer, StoreError, Wakeup};
use tracing::instrument;

use crate::error::store_error;
use crate::names::CollectionNames;
use crate::{MongoContext, MongoInboxStore, MongoOutboxOptions, MongoWakeupSource, Retention};

/// The outbox (and inbox) store on MongoDB.
///
/// Cheap to clone: clones share one client. Build it with
/// [`new`](Self::new), which validates the collection names, then run
/// [`ensure_indexes`](Self::ensure_indexes) (or, where an operator creates
/// them, [`verify`](Self::verify)) before use. Staging and the inbox use
/// multi-document transactions, so the server must be a replica set or a
/// sharded cluster.
#[derive(Debug, Clone)]
pub struct MongoOutboxStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    client: Client,
    database: Database,
    outbox: Collection<Document>,
    inbox: Collection<Document>,
    attempts: Collection<Document>,
    routes: Collection<Document>,
    /// Routes known to be recorded in the routes collection.
    known_routes: KnownRoutes,
    options: MongoOutboxOptions,
    hlc: HybridClock,
    seq: HybridClock,
}

impl MongoOutboxStore {
    /// A store in `database` with `options`.
    ///
    /// # Errors
    ///
    /// [`StoreError::Invalid`] when a collection name is unusable (see
    /// [`MAX_COLLECTION_NAME_LEN`](crate::MAX_COLLECTION_NAME_LEN)).
    ///
    /// ```no_run
    /// use tidings_mongo::mongodb::Client;
    /// use tidings_mongo::{MongoOutboxOptions, MongoOutboxStore};
    ///
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let client = Client::with_uri_str("mongodb://127.0.0.1:27017/?replicaSet=rs0").await?;
    /// let store = MongoOutboxStore::new(client.database("shop"), MongoOutboxOptions::new())?;
    /// store.ensure_indexes().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(database: Database, options: MongoOutboxOptions) -> Result<Self, StoreError> {
        let names = CollectionNames::new(options.get_collection(), options.get_inbox_collection())?;
        let clock = options.get_clock().clone();
        Ok(Self {
            inner: Arc::new(Inner {
                client: database.client().clone(),
                outbox: database.collection(&names.outbox),
                inbox: database.collection(&names.inbox),
                attempts: database.collection(&names.attempts),
                routes: database.collection(&names.routes),
                known_routes: KnownRoutes::default(),
                database,
                hlc: HybridClock::new(clock.clone()),
                seq: HybridClock::new(clock),
                options,
            }),
        })
    }

    /// Starts a session with a transaction, ready for staging.
    ///
    /// # Errors
    ///
    /// [`StoreError::Unavailable`] when the database cannot be reached;
    /// [`StoreError::Backend`] for any other database error.
    #[instrument(skip_all, fields(db.system = "mongodb"), err)]
    pub async fn begin(&self) -> Result<MongoContext, StoreError> {
        let session = self
            .inner
            .client
            .start_session()
            .await
            .map_err(store_error)?;
        self.begin_on(session).await
    }

    /// Starts a transaction on a session the caller holds.
    ///
    /// # Errors
    ///
    /// [`StoreError::Unavailable`] when the database cannot be reached;
    /// [`StoreError::Backend`] for any other database error, such as a session
    /// already in a transaction.
    #[instrument(skip_all, fields(db.system = "mongodb"), err)]
    pub async fn begin_on(&self, mut session: ClientSession) -> Result<MongoContext, StoreError> {
        session.start_transaction().await.map_err(store_error)?;
        Ok(self.context(session))
    }

    /// Wraps a session whose transaction the caller already started; its
    /// operations so far commit with the staged events.
    pub fn context(&self, session: ClientSession) -> MongoContext {
        MongoContext::new(session, self.buffer(), self.clone())
    }

    /// The steps that relay this store's routes to `publisher`: a
    /// [wake-up source](Self::wakeup_source) waking them on inserts, and a relay and a
    /// backlog monitor per route added with
    /// [`Relays::route`](tidings_core::relay::Relays::route). Add the whole
    /// to a plan with
    /// [`LifecyclePlan::steps`](tidings_core::lifecycle::LifecyclePlan::steps).
    ///
    /// ```no_run
    /// use tidings_core::OutboxSpec;
    /// use tidings_core::lifecycle::LifecyclePlan;
    /// use tidings_core::memory::MemoryBroker;
    /// use tidings_mongo::MongoOutboxStore;
    ///
    /// static ORDER_EVENTS: OutboxSpec<u64> = OutboxSpec::json("order-events").destination("orders");
    ///
    /// # async fn run(store: MongoOutboxStore) -> Result<(), Box<dyn std::error::Error>> {
    /// // Any transport's publisher; the in-memory broker stands in here.
    /// let publisher = MemoryBroker::new();
    /// let plan = LifecyclePlan::new().steps(store.relays(publisher).route(&ORDER_EVENTS)?);
    /// plan.run_until(async { tokio::signal::ctrl_c().await.ok(); }).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn relays<P: tidings_core::Publisher + Clone>(
        &self,
        publisher: P,
    ) -> tidings_core::relay::Relays<Self, P> {
        tidings_core::relay::Relays::woken_by(self.clone(), publisher, |wakeup| {
            self.wakeup_source(wakeup)
        })
    }

    /// A wake-up source: a change-stream watcher waking `wakeup` whenever an event is staged into this
    /// store's outbox.
    pub fn wakeup_source(&self, wakeup: Wakeup) -> MongoWakeupSource {
        MongoWakeupSource::new(self.inner.outbox.clone(), wakeup)
    }

    /// The inbox store on this store's inbox collection; its transactions
    /// are [`MongoContext`]s, so a handler can stage events too.
    pub fn inbox(&self) -> MongoInboxStore {
        MongoInboxStore::new(self.clone())
    }

    /// The client.
    pub fn client(&self) -> &Client {
        &self.inner.client
    }

    /// The database holding the collections.
    pub fn database(&self) -> &Database {
        &self.inner.database
    }

    /// The outbox collection.
    pub fn outbox(&self) -> &Collection<Document> {
        &self.inner.outbox
    }

    /// The inbox collection.
    pub fn inbox_collection(&self) -> &Collection<Document> {
        &self.inner.inbox
    }

    /// The collection counting the inbox's handler attempts that have not
    /// committed: the inbox collection's name followed by `_attempts`.
    pub fn inbox_attempts_collection(&self) -> &Collection<Document> {
        &self.inner.attempts
    }

    /// The collection recording every route ever staged, one document per
    /// route keyed by its name: the outbox collection's name followed by
    /// `_routes`.
    pub fn routes_collection(&self) -> &Collection<Document> {
        &self.inner.routes
    }

    /// Routes known to be recorded in [`routes_collection`](Self::routes_collection).
    pub(crate) fn known_routes(&self) -> &KnownRoutes {
        &self.inner.known_routes
    }

    /// The options the store was built with.
    pub fn options(&self) -> &MongoOutboxOptions {
        &self.inner.options
    }

    pub(crate) fn now(&self) -> SystemTime {
        self.inner.options.get_clock().now()
    }

    /// The next creation-order stamp: increasing within this process and
    /// close to wall time across processes.
    pub(crate) fn next_seq(&self) -> i64 {
        self.inner.seq.now().as_u64() as i64
    }

    pub(crate) fn delete_on_publish(&self) -> bool {
        self.inner.options.get_retention() == Retention::Delete
    }

    fn buffer(&self) -> OutboxBuffer {
        OutboxBuffer::new(
            self.inner.options.get_clock().clone(),
            self.inner.hlc.clone(),
        )
    }
}
