//! Connecting to the store the options name.

use std::time::Duration;

use anyhow::Context;
use tidings_admin::Admin;
use tidings_admin::tidings_mongo::mongodb::Client;
use tidings_admin::tidings_mongo::mongodb::bson::doc;
use tidings_admin::tidings_mongo::mongodb::options::ClientOptions;
use tidings_admin::tidings_mongo::{MongoOutboxOptions, MongoOutboxStore};
use tidings_admin::tidings_postgres::sqlx::postgres::PgPoolOptions;
use tidings_admin::tidings_postgres::{Layout, PgOutboxOptions, PgOutboxStore};

use crate::args::StoreArgs;

/// How long connecting may take before the command gives up.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The PostgreSQL store of `args`, not connected: for what needs its
/// names and layout only, such as `migrate --print-sql`.
pub(crate) fn postgres_unconnected(args: &StoreArgs) -> anyhow::Result<PgOutboxStore> {
    let pool = PgPoolOptions::new()
        .connect_lazy(&args.database_url)
        .context("--database-url (or TIDINGS_DATABASE_URL) is not a PostgreSQL URL")?;
    Ok(PgOutboxStore::new(pool, postgres_options(args))?)
}

/// The operations on the PostgreSQL store of `args`.
pub(crate) async fn postgres(args: &StoreArgs) -> anyhow::Result<Admin<PgOutboxStore>> {
    let pool = PgPoolOptions::new()
        .max_connections(2)
        .acquire_timeout(CONNECT_TIMEOUT)
        .connect(&args.database_url)
        .await
        .context("cannot connect to PostgreSQL; check --database-url (or TIDINGS_DATABASE_URL)")?;
    Ok(Admin::new(PgOutboxStore::new(
        pool,
        postgres_options(args),
    )?))
}

/// The store options `args` name.
fn postgres_options(args: &StoreArgs) -> PgOutboxOptions {
    let mut options = PgOutboxOptions::new();
    if let Some(schema) = &args.schema {
        options = options.schema(schema);
    }
    if let Some(table) = &args.table {
        options = options.table(table);
    }
    if let Some(table) = &args.inbox_table {
        options = options.inbox_table(table);
    }
    if args.rotated {
        options = options.layout(Layout::Rotated);
    }
    options
}

/// The operations on the MongoDB store of `args`.
pub(crate) async fn mongo(args: &StoreArgs) -> anyhow::Result<Admin<MongoOutboxStore>> {
    let hint = "cannot connect to MongoDB; check --mongodb-url (or TIDINGS_MONGODB_URL)";
    let mut client_options = ClientOptions::parse(&args.mongodb_url)
        .await
        .context(hint)?;
    client_options.server_selection_timeout = Some(CONNECT_TIMEOUT);
    client_options.connect_timeout = Some(CONNECT_TIMEOUT);
    let client = Client::with_options(client_options).context(hint)?;
    client
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await
        .context(hint)?;
    let mut options = MongoOutboxOptions::new();
    if let Some(collection) = &args.collection {
        options = options.collection(collection);
    }
    if let Some(collection) = &args.inbox_collection {
        options = options.inbox_collection(collection);
    }
    let database = client.database(&args.mongodb_database);
    Ok(Admin::new(MongoOutboxStore::new(database, options)?))
}

/// An SQS client: credentials from `AWS_ACCESS_KEY_ID`,
/// `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN` (`test`/`test` when
/// unset, as local stand-ins take), region from `AWS_REGION` or
/// `AWS_DEFAULT_REGION` (default `us-east-1`), at `endpoint` or AWS's own.
#[cfg(feature = "sqs")]
pub(crate) fn sqs_client(
    endpoint: Option<&str>,
) -> tidings_admin::tidings_sqs::aws_sdk_sqs::Client {
    use tidings_admin::tidings_sqs::aws_sdk_sqs::config::{BehaviorVersion, Credentials, Region};
    use tidings_admin::tidings_sqs::aws_sdk_sqs::{Client, Config};

    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let region = env("AWS_REGION")
        .or_else(|| env("AWS_DEFAULT_REGION"))
        .unwrap_or_else(|| "us-east-1".to_owned());
    let credentials = Credentials::new(
        env("AWS_ACCESS_KEY_ID").unwrap_or_else(|| "test".to_owned()),
        env("AWS_SECRET_ACCESS_KEY").unwrap_or_else(|| "test".to_owned()),
        env("AWS_SESSION_TOKEN"),
        None,
        "tidings-cli",
    );
    let mut config = Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(region))
        .credentials_provider(credentials);
    if let Some(endpoint) = endpoint {
        config = config.endpoint_url(endpoint);
    }
    Client::from_conf(config.build())
}
