//! The chaos scenario's child processes: `chaos-relay <schema> <route>
//! <queue>` relays the route to RabbitMQ, `chaos-consumer <schema> <queue>`
//! consumes it through the PostgreSQL inbox; each runs until SIGTERM (or
//! its SIGKILL).

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use sqlx::AssertSqlSafe;
use sqlx::postgres::PgPoolOptions;
use tidings_consumer::{Consumer, ConsumerOptions, HandlerError, TxHandle, handler_fn};
use tidings_core::lifecycle::LifecyclePlan;
use tidings_core::relay::RelayOptions;
use tidings_core::{Message, OutboxSpec, QueueSpec};
use tidings_inbox::Inbox;
use tidings_postgres::{PgContext, PgOutboxOptions, PgOutboxStore};
use tidings_rabbitmq::{ConnectionOptions, PublisherOptions, RabbitConnection, SourceOptions};
use tidings_testing::services::{amqp_url, database_url};
use tokio::signal::unix::{SignalKind, signal};

use crate::env::{connect_options, create_table, table_in};
use crate::payload::Payload;

/// The lease of the chaos relays: short, so rows a killed relay claimed
/// in leased mode come back within seconds.
const LEASE: Duration = Duration::from_secs(2);

/// The per-key route of the run.
pub(super) fn spec(route: &str, queue: &str) -> OutboxSpec<Payload> {
    OutboxSpec::json_named(route.to_owned())
        .destination_named(queue.to_owned())
        .per_key()
}

/// The effects table (one row per committed effect, in commit order per
/// key) and the table counting handler starts.
pub(super) async fn create_tables(store: &PgOutboxStore) -> anyhow::Result<()> {
    let effects = "seq bigserial primary key, event_id uuid not null";
    create_table(store, "effects", effects).await?;
    create_table(store, "handler_starts", "event_id uuid not null").await
}

/// Runs one child until SIGTERM.
pub(crate) async fn run_child(args: Vec<String>) -> anyhow::Result<String> {
    let arg = |i: usize| -> anyhow::Result<&str> {
        args.get(i).map(String::as_str).context("missing argument")
    };
    let pool = PgPoolOptions::new()
        .max_connections(12)
        .connect_with(connect_options(&database_url())?.application_name(arg(0)?))
        .await?;
    let store = PgOutboxStore::new(pool, PgOutboxOptions::new().schema(arg(1)?))?;
    let rabbit = RabbitConnection::new(ConnectionOptions::new(amqp_url()).connection_name(arg(0)?));
    let plan = match arg(0)? {
        "chaos-relay" => {
            let spec = spec(arg(2)?, arg(3)?);
            let relays = store
                .relays(rabbit.publisher(PublisherOptions::default()))
                .options(
                    RelayOptions::default()
                        .lease(LEASE)
                        .sweep_interval(LEASE / 2),
                )
                .route(&spec)?;
            LifecyclePlan::new().steps(relays)
        }
        "chaos-consumer" => {
            let queue = QueueSpec::<Payload>::json_named(arg(2)?.to_owned());
            let source = rabbit.source(SourceOptions::default().prefetch(64));
            let consumer = Consumer::new(source, queue, recording_handler(&store))?
                .inbox(Inbox::new(store.inbox(), "chaos")?)
                .options(ConsumerOptions::default().concurrency(8));
            LifecyclePlan::new().step("consumer", consumer)
        }
        other => bail!("unknown child {other}"),
    };
    let mut terminate = signal(SignalKind::terminate())?;
    plan.run_until(async move {
        terminate.recv().await;
    })
    .await?;
    Ok("stopped".to_owned())
}

/// Counts its start outside the transaction, then writes the event's
/// effect in it.
fn recording_handler(
    store: &PgOutboxStore,
) -> impl tidings_consumer::Handler<Payload, PgContext<'static>> {
    let pool = store.pool().clone();
    let start = Arc::new(format!(
        "insert into {} (event_id) values ($1)",
        table_in(store, "handler_starts")
    ));
    let effect = Arc::new(format!(
        "insert into {} (event_id) values ($1)",
        table_in(store, "effects")
    ));
    handler_fn(
        move |msg: Message<Payload>, tx: TxHandle<PgContext<'static>>| {
            let (pool, start, effect) = (pool.clone(), start.clone(), effect.clone());
            async move {
                sqlx::query(AssertSqlSafe(start.as_str()))
                    .bind(msg.event_id())
                    .execute(&pool)
                    .await?;
                let mut ctx = tx.lock().await;
                sqlx::query(AssertSqlSafe(effect.as_str()))
                    .bind(msg.event_id())
                    .execute(ctx.tx())
                    .await?;
                Ok::<_, HandlerError>(())
            }
        },
    )
}
