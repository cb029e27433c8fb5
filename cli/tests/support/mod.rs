//! What the command-line tests share: the `tidings` program pointed at the
//! real services, stores in schemas or databases of their own, and rows
//! made to fail through the relay's own store calls.
#![allow(dead_code)]

pub(crate) mod consumer;
pub(crate) mod letters;
pub(crate) mod looks;
pub(crate) mod rabbit;

use std::time::Duration;

use assert_cmd::Command;
use tidings_admin::tidings_mongo::mongodb::Client;
use tidings_admin::tidings_mongo::mongodb::options::ClientOptions;
use tidings_admin::tidings_mongo::{MongoOutboxOptions, MongoOutboxStore};
use tidings_admin::tidings_postgres::{PgOutboxOptions, PgOutboxStore, Retention};
use tidings_core::{
    ClaimRequest, ClaimedBatch, HybridClock, InboxStore, OutboxBuffer, OutboxSpec, OutboxStore,
    Outcome, Settlement, StageEvents, SystemClock,
};
use tidings_testing::names::{consumer_name, unique_name};
use tidings_testing::services::{self, amqp_url, database_url, mongodb_url, service_missing};
use uuid::Uuid;

/// The route of most seeded events.
pub(crate) static ORDERS: OutboxSpec<u32> = OutboxSpec::json("order-events").destination("orders");
/// A second route.
pub(crate) static INVOICES: OutboxSpec<u32> =
    OutboxSpec::json("invoice-events").destination("invoices");
/// A third route.
pub(crate) static REFUNDS: OutboxSpec<u32> =
    OutboxSpec::json("refund-events").destination("refunds");

/// `tidings` with every service address given, and no setting taken from
/// the test's own environment.
pub(crate) fn tidings() -> Command {
    tidings_on(&database_url())
}

/// [`tidings`] with its PostgreSQL at `database_url`.
pub(crate) fn tidings_on(database_url: &str) -> Command {
    let mut command = Command::cargo_bin("tidings").expect("the tidings binary");
    for name in [
        "DATABASE_URL",
        "MONGODB_URL",
        "MONGODB_DATABASE",
        "AMQP_URL",
        "SQS_ENDPOINT",
        "TIDINGS_STORE",
        "TIDINGS_SCHEMA",
        "TIDINGS_BROKER",
        "TIDINGS_DATABASE_URL",
        "TIDINGS_TABLE",
        "TIDINGS_INBOX_TABLE",
        "TIDINGS_ROTATED",
        "TIDINGS_MONGODB_URL",
        "TIDINGS_MONGODB_DATABASE",
        "TIDINGS_COLLECTION",
        "TIDINGS_INBOX_COLLECTION",
        "TIDINGS_AMQP_URL",
        "TIDINGS_AMQP_CONNECTION_NAME",
        "TIDINGS_SQS_ENDPOINT",
    ] {
        command.env_remove(name);
    }
    command
        .args(["--database-url", database_url])
        .args(["--mongodb-url", &mongodb_url()])
        .args(["--amqp-url", &amqp_url()])
        .timeout(Duration::from_secs(120));
    command
}

/// `tidings` on the PostgreSQL store in `schema`.
pub(crate) fn on_postgres(schema: &str) -> Command {
    let mut command = tidings();
    command.args(["--schema", schema]);
    command
}

/// `tidings` on the MongoDB store in `database`.
pub(crate) fn on_mongo(database: &str) -> Command {
    let mut command = tidings();
    command.args(["--store", "mongo", "--mongodb-database", database]);
    command
}

/// The standard output of a run that must succeed.
pub(crate) fn stdout(command: &mut Command) -> String {
    let output = command.output().expect("run tidings");
    assert!(
        output.status.success(),
        "tidings failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The JSON a `--json` run that must succeed prints.
pub(crate) fn json(command: &mut Command) -> serde_json::Value {
    let text = stdout(command.arg("--json"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// A migrated PostgreSQL store keeping published rows, in a fresh schema.
pub(crate) async fn pg_store() -> PgOutboxStore {
    let pool = services::postgres_pool(8).await;
    let options = PgOutboxOptions::new()
        .schema(unique_name("tidings_cli"))
        .retention(Retention::Keep);
    let store = PgOutboxStore::new(pool, options).expect("valid names");
    store.migrate().await.expect("migrate");
    store
}

/// Drops the store's schema.
pub(crate) async fn drop_schema(store: &PgOutboxStore) {
    services::drop_schema(store.pool(), store.options().get_schema()).await;
}

/// A MongoDB store with its indexes, in a fresh database.
pub(crate) async fn mongo_store() -> MongoOutboxStore {
    let url = mongodb_url();
    let mut options = ClientOptions::parse(&url)
        .await
        .unwrap_or_else(|e| service_missing("MongoDB", &url, &e));
    options.server_selection_timeout = Some(Duration::from_secs(10));
    let client =
        Client::with_options(options).unwrap_or_else(|e| service_missing("MongoDB", &url, &e));
    let database = client.database(&unique_name("tidings_cli"));
    let store = MongoOutboxStore::new(database, MongoOutboxOptions::new()).expect("valid names");
    store
        .ensure_indexes()
        .await
        .unwrap_or_else(|e| service_missing("MongoDB", &url, &e));
    store
}

/// Stages `types` on `spec` in one transaction of `store`, the payload of
/// each its index; returns the event ids in order.
pub(crate) async fn stage<S: StageEvents>(
    store: &S,
    spec: &OutboxSpec<u32>,
    types: &[&str],
) -> Vec<Uuid> {
    let clock = SystemClock::shared();
    let mut outbox = OutboxBuffer::new(clock.clone(), HybridClock::new(clock));
    let stage = |(n, event_type): (usize, &&str)| {
        let staged = outbox.stage(spec, event_type, &(n as u32));
        staged.expect("stage").envelope().event_id
    };
    let ids = types.iter().enumerate().map(stage).collect();
    let events = outbox.take().expect("valid events");
    store.stage_events(events).await.expect("stage");
    ids
}

/// Marks the events `ids` handled by `consumer` in `inbox`, in one
/// transaction.
pub(crate) async fn mark_handled<I: InboxStore>(inbox: &I, consumer: &str, ids: &[Uuid]) {
    let consumer = consumer_name(consumer);
    let mut tx = inbox.begin().await.expect("begin");
    for &id in ids {
        inbox.mark(&mut tx, consumer.key(id)).await.expect("mark");
    }
    inbox.commit(tx).await.expect("commit");
}

/// Claims every row of `spec`'s route and settles them: the events of
/// `failed` fail with `reason`, the rest are published.
pub(crate) async fn settle<S: OutboxStore>(
    store: &S,
    spec: &OutboxSpec<u32>,
    failed: &[Uuid],
    reason: &str,
) {
    let request = ClaimRequest {
        route: spec.route(),
        limit: 100,
        lease: Duration::from_secs(60),
        after: None,
    };
    let batch = store.claim(request).await.expect("claim");
    let settlements = batch
        .records()
        .iter()
        .map(|r| Settlement {
            event_id: r.envelope.event_id,
            outcome: if failed.contains(&r.envelope.event_id) {
                Outcome::Failed {
                    reason: reason.to_owned(),
                }
            } else {
                Outcome::Published
            },
        })
        .collect();
    batch.settle(settlements).await.expect("settle");
}
