//! The services a run talks to, and the fresh schemas and queues each
//! scenario makes and removes.

use std::time::Duration;

use anyhow::Context;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions, PgSslMode};
use sqlx::{AssertSqlSafe, PgPool};
use tidings_core::OutboxSpec;
use tidings_postgres::{ClaimMode, Layout, PgOutboxOptions, PgOutboxStore, Pooling, Retention};
use tidings_rabbitmq::{ConnectionOptions, QueueOptions, Topology};
use tidings_testing::names::unique_name;
use tidings_testing::services::{
    SETUP_COMMAND, amqp_url, database_url, logical_database_url, pgbouncer_url,
};

use crate::payload::Payload;

/// Connections to PostgreSQL and RabbitMQ.
#[derive(Debug, Clone)]
pub(crate) struct Env {
    /// The broker URL.
    pub(crate) amqp_url: String,
    /// The pool every store of the run shares.
    pub(crate) pool: PgPool,
    /// The layout of stores that delete published rows.
    pub(crate) layout: Layout,
}

/// How the bench reaches PostgreSQL: `url` as given, except that a URL
/// naming no `sslmode` is reached in plain text, as the bench reaches
/// RabbitMQ. sqlx would otherwise take the TLS that the local server
/// offers, and only the relay's side of drain-rabbitmq would pay for it.
/// A URL with `sslmode` in it measures that mode instead.
pub(crate) fn connect_options(url: &str) -> anyhow::Result<PgConnectOptions> {
    let options: PgConnectOptions = url.parse().with_context(|| format!("DATABASE_URL {url}"))?;
    Ok(match url.contains("sslmode=") {
        true => options,
        false => options.ssl_mode(PgSslMode::Disable),
    })
}

impl Env {
    /// Connects to the database and checks the broker answers.
    pub(crate) async fn connect(max_connections: u32, layout: Layout) -> anyhow::Result<Self> {
        let database_url = database_url();
        let pool = open_pool(&database_url, max_connections)
            .await
            .with_context(|| format!("PostgreSQL at {database_url}; run {SETUP_COMMAND}"))?;
        Ok(Self {
            amqp_url: amqp_url(),
            pool,
            layout,
        })
    }

    /// Runs `work` with the run's connections, the pool on the cluster
    /// with `wal_level=logical` at `LOGICAL_DATABASE_URL` instead, where
    /// the log-tailing scenarios run, their polling baselines beside them
    /// so that both sides meet the same server; closes that pool after.
    pub(crate) async fn on_logical<T>(
        &self,
        max_connections: u32,
        work: impl AsyncFnOnce(&Env) -> anyhow::Result<T>,
    ) -> anyhow::Result<T> {
        let url = logical_database_url();
        let pool = open_pool(&url, max_connections).await.with_context(|| {
            format!("PostgreSQL with wal_level=logical at {url}; run {SETUP_COMMAND}")
        })?;
        let logical = Self {
            amqp_url: self.amqp_url.clone(),
            pool,
            layout: self.layout,
        };
        let result = work(&logical).await;
        logical.pool.close().await;
        result
    }

    /// A pool through the transaction pooler at `PGBOUNCER_URL`, every
    /// connection opened up front.
    pub(crate) async fn pooled_pool(&self, max_connections: u32) -> anyhow::Result<PgPool> {
        let url = pgbouncer_url();
        open_pool(&url, max_connections)
            .await
            .with_context(|| format!("PgBouncer at {url}; run {SETUP_COMMAND}"))
    }

    /// A store in a fresh schema named after `prefix`, migrated, on
    /// `pool`, which reaches PostgreSQL through a transaction pooler.
    pub(crate) async fn pooled_store(
        &self,
        pool: &PgPool,
        prefix: &str,
        mode: ClaimMode,
    ) -> anyhow::Result<PgOutboxStore> {
        let options = PgOutboxOptions::new()
            .schema(unique_name(&format!("bench_{prefix}")))
            .claim_mode(mode)
            .pooling(Pooling::Transaction);
        let store = PgOutboxStore::new(pool.clone(), options)?;
        store.migrate().await?;
        Ok(store)
    }

    /// A store in a fresh schema named after `prefix`, migrated, whose
    /// relays claim in the default mode.
    pub(crate) async fn store(
        &self,
        prefix: &str,
        retention: Retention,
    ) -> anyhow::Result<PgOutboxStore> {
        self.store_claiming(prefix, retention, ClaimMode::default())
            .await
    }

    /// A store in a fresh schema named after `prefix`, migrated, whose
    /// relays claim in `mode`.
    pub(crate) async fn store_claiming(
        &self,
        prefix: &str,
        retention: Retention,
        mode: ClaimMode,
    ) -> anyhow::Result<PgOutboxStore> {
        let layout = match retention {
            Retention::Delete => self.layout,
            Retention::Keep => Layout::Plain,
        };
        let options = PgOutboxOptions::new()
            .retention(retention)
            .claim_mode(mode)
            .layout(layout);
        self.store_with(prefix, options).await
    }

    /// A store with `options` in a fresh schema named after `prefix`,
    /// migrated.
    pub(crate) async fn store_with(
        &self,
        prefix: &str,
        options: PgOutboxOptions,
    ) -> anyhow::Result<PgOutboxStore> {
        let options = options.schema(unique_name(&format!("bench_{prefix}")));
        let store = PgOutboxStore::new(self.pool.clone(), options)?;
        store.migrate().await?;
        Ok(store)
    }

    /// Turns autovacuum off for the store's tables, in a scenario that
    /// vacuums its outboxes between rounds ([`vacuum`](Self::vacuum)), so
    /// that it cannot start in the middle of one side's timing and not of
    /// another's.
    pub(crate) async fn stop_autovacuum(&self, store: &PgOutboxStore) -> anyhow::Result<()> {
        stop_autovacuum_on(&self.pool, store).await
    }

    /// Writes every dirty page out (`CHECKPOINT`), so that a checkpoint
    /// of work done before timing does not run during it. Needs a role
    /// allowed to (a superuser or `pg_checkpoint`); without one, says so
    /// and goes on.
    pub(crate) async fn checkpoint(&self) {
        if let Err(error) = sqlx::query("checkpoint").execute(&self.pool).await {
            tracing::warn!(%error, "cannot checkpoint before timing; a checkpoint may fall inside it");
        }
    }

    /// Drops the store's schema and everything in it.
    pub(crate) async fn drop_store(&self, store: &PgOutboxStore) -> anyhow::Result<()> {
        let schema = store.options().get_schema();
        let sql = format!("drop schema if exists \"{schema}\" cascade");
        sqlx::query(AssertSqlSafe(sql)).execute(&self.pool).await?;
        Ok(())
    }

    /// Runs `vacuum analyze` on the store's outbox, so every measurement
    /// starts from fresh statistics and a clean visibility map.
    pub(crate) async fn vacuum(&self, store: &PgOutboxStore) -> anyhow::Result<()> {
        vacuum_on(&self.pool, store).await
    }

    /// Declares a fresh classic queue named after `prefix`; it expires
    /// after ten idle minutes should the run die before removing it.
    pub(crate) async fn queue(&self, prefix: &str) -> anyhow::Result<&'static str> {
        let name: &'static str = Box::leak(unique_name(prefix).into_boxed_str());
        let options = QueueOptions::classic().expires(Duration::from_secs(600));
        self.topology()
            .declare_queue(name, options)
            .await
            .with_context(|| format!("RabbitMQ at {}; run {SETUP_COMMAND}", self.amqp_url))?;
        Ok(name)
    }

    /// Deletes a queue made by [`queue`](Self::queue).
    pub(crate) async fn drop_queue(&self, name: &str) -> anyhow::Result<()> {
        self.topology().delete_queue(name).await?;
        Ok(())
    }

    /// Drops the schemas of `stores` and deletes `queues`: what a scenario
    /// made, once it has measured.
    pub(crate) async fn remove<'a>(
        &self,
        stores: impl IntoIterator<Item = &'a PgOutboxStore>,
        queues: impl IntoIterator<Item = &'a str>,
    ) -> anyhow::Result<()> {
        for store in stores {
            self.drop_store(store).await?;
        }
        for queue in queues {
            self.drop_queue(queue).await?;
        }
        Ok(())
    }

    /// Connection options for a named client connection.
    pub(crate) fn amqp(&self, connection_name: &str) -> ConnectionOptions {
        ConnectionOptions::new(self.amqp_url.clone()).connection_name(connection_name)
    }

    fn topology(&self) -> Topology {
        Topology::new(self.amqp("tidings-bench-topology"))
    }
}

/// A pool of `max_connections` on `url`, every connection opened up front:
/// opening one mid-measurement stalls whoever waits for it by tens of
/// milliseconds.
async fn open_pool(url: &str, max_connections: u32) -> anyhow::Result<PgPool> {
    let pool = PgPoolOptions::new()
        .max_connections(max_connections)
        .min_connections(max_connections)
        .acquire_timeout(Duration::from_secs(30))
        .connect_with(connect_options(url)?)
        .await?;
    // The pool opens its minimum in the background; wait for it.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while pool.size() < max_connections && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(pool)
}

/// [`Env::stop_autovacuum`] on `pool`, which reaches the store's
/// database directly: a store in a database of its own passes its pool.
pub(crate) async fn stop_autovacuum_on(pool: &PgPool, store: &PgOutboxStore) -> anyhow::Result<()> {
    let schema = store.options().get_schema();
    // Plain tables only: a rotated outbox's slots are its tables, and a
    // partitioned table takes no storage parameters.
    let tables: Vec<String> = sqlx::query_scalar(
        "select c.relname::text from pg_class as c \
         join pg_namespace as n on n.oid = c.relnamespace \
         where n.nspname = $1 and c.relkind = 'r'",
    )
    .bind(schema)
    .fetch_all(pool)
    .await?;
    for table in tables {
        let sql = format!("alter table \"{schema}\".\"{table}\" set (autovacuum_enabled = false)");
        sqlx::query(AssertSqlSafe(sql)).execute(pool).await?;
    }
    Ok(())
}

/// [`Env::vacuum`] on `pool`, which reaches the store's database directly.
pub(crate) async fn vacuum_on(pool: &PgPool, store: &PgOutboxStore) -> anyhow::Result<()> {
    let sql = format!("vacuum analyze {}", outbox_table(store));
    sqlx::query(AssertSqlSafe(sql)).execute(pool).await?;
    Ok(())
}

/// The quoted `schema.table` of a store's outbox.
pub(crate) fn outbox_table(store: &PgOutboxStore) -> String {
    let options = store.options();
    format!("\"{}\".\"{}\"", options.get_schema(), options.get_table())
}

/// The quoted `schema.name` of a table beside a store's outbox.
pub(crate) fn table_in(store: &PgOutboxStore, name: &str) -> String {
    format!("\"{}\".\"{name}\"", store.options().get_schema())
}

/// Creates the table `name` beside a store's outbox, with `columns` (SQL
/// column definitions).
pub(crate) async fn create_table(
    store: &PgOutboxStore,
    name: &str,
    columns: &str,
) -> anyhow::Result<()> {
    let table = table_in(store, name);
    let sql = format!("create table {table} ({columns})");
    sqlx::query(AssertSqlSafe(sql))
        .execute(store.pool())
        .await?;
    Ok(())
}

/// An outbox spec with a fresh route relaying to `queue`.
pub(crate) fn spec(queue: &'static str) -> &'static OutboxSpec<Payload> {
    let route: &'static str = Box::leak(unique_name("bench-events").into_boxed_str());
    Box::leak(Box::new(OutboxSpec::json(route).destination(queue)))
}
