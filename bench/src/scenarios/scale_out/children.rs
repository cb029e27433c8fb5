//! The scale-out scenario's child process: `scale-relay <name> <schema>
//! <route> <queue> unordered|per-key` relays one route to RabbitMQ as a
//! service would (the store's listener waking it, default options: locked
//! claims of 1,000 published in windows of 1,000), notes in the schema's
//! `ready` table that it runs, and runs until SIGTERM (or its SIGKILL).
//! `<name>` is its PostgreSQL application name, by which the scenario
//! finds its sessions.

use std::time::Duration;

use anyhow::{Context, bail};
use sqlx::AssertSqlSafe;
use sqlx::postgres::PgPoolOptions;
use tidings_core::OutboxSpec;
use tidings_core::lifecycle::LifecyclePlan;
use tidings_postgres::{PgOutboxOptions, PgOutboxStore};
use tidings_rabbitmq::{ConnectionOptions, PublisherOptions, RabbitConnection};
use tidings_testing::services::{amqp_url, database_url};
use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

use crate::env::{connect_options, create_table, table_in};
use crate::payload::Payload;

/// How long a child runs before it counts itself ready: its listener has
/// connected and its relay has made its first (empty) pass.
const SETTLE: Duration = Duration::from_millis(500);

/// The order a round's route keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ordering {
    /// Events in any order.
    Unordered,
    /// Events in order per ordering key (`OrderingMode::PerKey`).
    PerKey,
}

impl Ordering {
    /// Its name, on the child's command line and in the figures.
    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Unordered => "unordered",
            Self::PerKey => "per-key",
        }
    }

    fn parse(name: &str) -> anyhow::Result<Self> {
        match name {
            "unordered" => Ok(Self::Unordered),
            "per-key" => Ok(Self::PerKey),
            other => bail!("unknown ordering {other}"),
        }
    }
}

/// The route of a round, relaying to `queue`.
pub(super) fn spec(route: &str, queue: &str, ordering: Ordering) -> OutboxSpec<Payload> {
    let spec = OutboxSpec::json_named(route.to_owned()).destination_named(queue.to_owned());
    match ordering {
        Ordering::Unordered => spec,
        Ordering::PerKey => spec.per_key(),
    }
}

/// The table children note themselves in once ready.
pub(super) async fn create_ready_table(store: &PgOutboxStore) -> anyhow::Result<()> {
    create_table(store, "ready", "name text not null").await
}

/// How many children have noted themselves ready.
pub(super) async fn ready(store: &PgOutboxStore) -> anyhow::Result<usize> {
    let sql = format!("select count(*) from {}", table_in(store, "ready"));
    let ready: i64 = sqlx::query_scalar(AssertSqlSafe(sql))
        .fetch_one(store.pool())
        .await?;
    Ok(ready as usize)
}

/// Runs one relay child until SIGTERM.
pub(crate) async fn run_child(args: Vec<String>) -> anyhow::Result<String> {
    let arg = |i: usize| -> anyhow::Result<&str> {
        args.get(i).map(String::as_str).context("missing argument")
    };
    let name = arg(1)?;
    let pool = PgPoolOptions::new()
        .max_connections(12)
        .connect_with(connect_options(&database_url())?.application_name(name))
        .await?;
    let store = PgOutboxStore::new(pool, PgOutboxOptions::new().schema(arg(2)?))?;
    let spec = spec(arg(3)?, arg(4)?, Ordering::parse(arg(5)?)?);
    let rabbit = RabbitConnection::new(ConnectionOptions::new(amqp_url()).connection_name(name));
    let relays = store
        .relays(rabbit.publisher(PublisherOptions::default()))
        .route(&spec)?;
    let cancel = CancellationToken::new();
    let plan = tokio::spawn(LifecyclePlan::new().steps(relays).run(cancel.clone()));
    tokio::time::sleep(SETTLE).await;
    let sql = format!(
        "insert into {} (name) values ($1)",
        table_in(&store, "ready")
    );
    sqlx::query(AssertSqlSafe(sql))
        .bind(name)
        .execute(store.pool())
        .await?;
    signal(SignalKind::terminate())?.recv().await;
    cancel.cancel();
    plan.await??;
    Ok("stopped".to_owned())
}
