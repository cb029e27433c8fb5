//! The MongoDB server of a run, and the fresh collections each scenario
//! makes and drops.

use std::time::Duration;

use anyhow::Context;
use tidings_mongo::mongodb::bson::{Document, doc};
use tidings_mongo::mongodb::options::ClientOptions;
use tidings_mongo::mongodb::{Client, Collection, Database};
use tidings_mongo::{MongoOutboxOptions, MongoOutboxStore, Retention};
use tidings_testing::names::unique_name;
use tidings_testing::services::{SETUP_COMMAND, mongodb_url};

/// The database the bench's collections live in.
const DATABASE: &str = "tidings_bench";

/// The bench database on `MONGODB_URL`, checked with a ping.
pub(super) async fn database() -> anyhow::Result<Database> {
    let url = mongodb_url();
    let connect = async {
        let mut options = ClientOptions::parse(&url).await?;
        options.server_selection_timeout = Some(Duration::from_secs(10));
        options.app_name = Some("tidings-bench".to_owned());
        let client = Client::with_options(options)?;
        client
            .database("admin")
            .run_command(doc! { "ping": 1 })
            .await?;
        Ok::<_, anyhow::Error>(client.database(DATABASE))
    };
    connect
        .await
        .with_context(|| format!("MongoDB at {url}; run {SETUP_COMMAND}"))
}

/// A store on fresh collections named after `prefix`, its indexes made,
/// deleting what it publishes.
pub(super) async fn store(database: &Database, prefix: &str) -> anyhow::Result<MongoOutboxStore> {
    let name = unique_name(&format!("bench_{prefix}"));
    let options = MongoOutboxOptions::new()
        .collection(name.clone())
        .inbox_collection(format!("{name}_inbox"))
        .retention(Retention::Delete);
    let store = MongoOutboxStore::new(database.clone(), options)?;
    store.ensure_indexes().await?;
    Ok(store)
}

/// The business collection beside a store's outbox.
pub(super) fn orders(store: &MongoOutboxStore) -> Collection<Document> {
    let name = format!("{}_orders", store.outbox().name());
    store.database().collection(&name)
}

/// Drops the store's collections and its business collection.
pub(super) async fn drop_store(store: &MongoOutboxStore) -> anyhow::Result<()> {
    store.outbox().drop().await?;
    store.inbox_collection().drop().await?;
    store.inbox_attempts_collection().drop().await?;
    orders(store).drop().await?;
    Ok(())
}
