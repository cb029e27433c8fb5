//! What every test of this crate shares: a client on the real server and a
//! store whose collections no other test uses.

// Each test file uses its own subset of these helpers.
#![allow(dead_code)]

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mongodb::bson::{Document, doc};
use mongodb::options::ClientOptions;
use mongodb::{Client, Collection, Database};
use tidings_core::{OutboxSpec, StagedEvent};
use tidings_mongo::{MongoOutboxOptions, MongoOutboxStore, Retention};
use tidings_testing::names::unique_name;
use tidings_testing::services::{mongodb_url, service_missing};

pub(crate) mod server;

/// The database the tests' collections live in.
pub(crate) const DATABASE: &str = "tidings_test";

/// The spec most tests stage through.
pub(crate) static ORDER_EVENTS: OutboxSpec<u64> =
    OutboxSpec::json("order-events").destination("orders");
/// A per-key spec.
pub(crate) static KEYED_EVENTS: OutboxSpec<u64> = OutboxSpec::json("keyed-events")
    .destination("orders")
    .per_key();

/// Sends the crate's logs to the test's output (shown when it fails);
/// `RUST_LOG` filters them, `info` by default.
pub(crate) fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_test_writer()
        .try_init();
}

/// A client on `url`, checked with a ping; fails the test with the setup
/// command when the server does not answer.
pub(crate) async fn client_on(url: &str) -> Client {
    init_tracing();
    let mut options = ClientOptions::parse(url)
        .await
        .unwrap_or_else(|e| service_missing("MongoDB", url, &e));
    options.server_selection_timeout = Some(Duration::from_secs(10));
    options.connect_timeout = Some(Duration::from_secs(10));
    let client =
        Client::with_options(options).unwrap_or_else(|e| service_missing("MongoDB", url, &e));
    client
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await
        .unwrap_or_else(|e| service_missing("MongoDB", url, &e));
    client
}

/// The test database on `MONGODB_URL`.
pub(crate) async fn database() -> Database {
    let database = client_on(&mongodb_url()).await.database(DATABASE);
    drop_stale_collections(&database).await;
    database
}

/// Collections made by these tests are named `t<unix seconds>_<kind>_<random>`,
/// so the janitor knows their age.
pub(crate) fn collection_name(kind: &str) -> String {
    unique_name(&format!("t{}_{kind}", unix_seconds()))
}

fn unix_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Collections left behind by runs that stopped early (conformance cases
/// cannot drop theirs): those made more than an hour ago are dropped, once
/// per test process.
async fn drop_stale_collections(database: &Database) {
    static DONE: AtomicBool = AtomicBool::new(false);
    if DONE.swap(true, Ordering::SeqCst) {
        return;
    }
    let Ok(names) = database.list_collection_names().await else {
        return;
    };
    let hour_ago = unix_seconds().saturating_sub(3600);
    for name in names {
        let made = name
            .strip_prefix('t')
            .and_then(|rest| rest.split('_').next())
            .and_then(|secs| secs.parse::<u64>().ok());
        if made.is_some_and(|secs| secs < hour_ago) {
            let _ = database.collection::<Document>(&name).drop().await;
        }
    }
}

/// A store on fresh collections, indexes ensured.
pub(crate) async fn store(retention: Retention) -> MongoOutboxStore {
    store_in(database().await, retention).await
}

/// A store on fresh collections of `database`, indexes ensured.
pub(crate) async fn store_in(database: Database, retention: Retention) -> MongoOutboxStore {
    let options = MongoOutboxOptions::new()
        .collection(collection_name("outbox"))
        .inbox_collection(collection_name("inbox"))
        .retention(retention);
    let store = MongoOutboxStore::new(database, options).expect("valid names");
    store.ensure_indexes().await.expect("ensure indexes");
    store
}

/// Drops the store's collections.
pub(crate) async fn drop_collections(store: &MongoOutboxStore) {
    store.outbox().drop().await.expect("drop outbox");
    store.inbox_collection().drop().await.expect("drop inbox");
    store
        .inbox_attempts_collection()
        .drop()
        .await
        .expect("drop inbox attempts");
}

/// The stores a conformance harness made, so their collections go after
/// the case.
#[derive(Debug, Default)]
pub(crate) struct MadeStores(Mutex<Vec<MongoOutboxStore>>);

impl MadeStores {
    /// Remembers `store`, and gives it back.
    pub(crate) fn keep(&self, store: MongoOutboxStore) -> MongoOutboxStore {
        self.0.lock().unwrap().push(store.clone());
        store
    }

    /// Drops the collections of every store made so far.
    pub(crate) async fn drop_all(&self) {
        let stores = std::mem::take(&mut *self.0.lock().unwrap());
        for store in &stores {
            drop_collections(store).await;
        }
    }
}

/// Commits `events` through the store's staging path.
pub(crate) async fn commit(store: &MongoOutboxStore, events: Vec<StagedEvent>) {
    let mut ctx = store.begin().await.expect("begin");
    ctx.outbox().extend(events);
    ctx.commit().await.expect("commit");
}

/// Up to `limit` events of [`ORDER_EVENTS`], claimed for a minute.
pub(crate) async fn claim(store: &MongoOutboxStore, limit: usize) -> tidings_mongo::MongoBatch {
    let request = tidings_core::ClaimRequest {
        route: ORDER_EVENTS.route(),
        limit,
        lease: Duration::from_secs(60),
        after: None,
    };
    tidings_core::OutboxStore::claim(store, request)
        .await
        .expect("claim")
}

/// Documents in `collection` (the store's outbox or inbox), whatever
/// their route or status.
pub(crate) async fn documents(collection: &Collection<Document>) -> u64 {
    collection
        .count_documents(Document::new())
        .await
        .expect("count documents")
}
