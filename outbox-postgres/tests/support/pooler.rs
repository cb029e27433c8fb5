//! Stores behind the PgBouncer in transaction mode that the setup command
//! starts (`PGBOUNCER_URL`).

use std::time::Duration;

use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use tidings_postgres::{ClaimMode, PgOutboxOptions, PgOutboxStore, Pooling, Retention};
use tidings_testing::names::unique_name;
use tidings_testing::services::{database_url, pgbouncer_url, service_missing};

use super::SCHEMA_PREFIX;

/// The options of a connection through the pooler, named `application`
/// so the pooler's console can tell its clients apart.
pub(crate) fn pooled_options(application: &str) -> PgConnectOptions {
    let url = pgbouncer_url();
    let options: PgConnectOptions = url.parse().expect("PGBOUNCER_URL");
    options.application_name(application)
}

/// A pool of up to `max_connections` through the pooler; fails the test
/// with the setup command when the pooler does not answer.
pub(crate) async fn pooled_pool(max_connections: u32) -> PgPool {
    pooled_pool_named(max_connections, &unique_name("tidings_pooled")).await
}

/// A pool through the pooler whose connections are named `application`.
pub(crate) async fn pooled_pool_named(max_connections: u32, application: &str) -> PgPool {
    // The server answers first, so a missing pooler is not mistaken for it.
    drop(super::pool(1).await);
    PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(Duration::from_secs(20))
        .connect_with(pooled_options(application))
        .await
        .unwrap_or_else(|e| service_missing("PgBouncer", &pgbouncer_url(), &e))
}

/// The options of a direct connection to the server, for listeners.
pub(crate) fn direct_options() -> PgConnectOptions {
    database_url().parse().expect("DATABASE_URL")
}

/// A migrated store behind the pooler, in a fresh schema, claiming in
/// `mode`.
pub(crate) async fn pooled_store(retention: Retention, mode: ClaimMode) -> PgOutboxStore {
    let options = PgOutboxOptions::new().retention(retention).claim_mode(mode);
    pooled_store_on(pooled_pool(8).await, options).await
}

/// A migrated store on `pool`, behind the pooler, with `options`, in a
/// fresh schema.
pub(crate) async fn pooled_store_on(pool: PgPool, options: PgOutboxOptions) -> PgOutboxStore {
    let options = options
        .schema(unique_name(SCHEMA_PREFIX))
        .pooling(Pooling::Transaction);
    let store = PgOutboxStore::new(pool, options).expect("valid options");
    store.migrate().await.expect("migrate through the pooler");
    store
}
