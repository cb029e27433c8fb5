//! The PostgreSQL database the examples reach: the one at `DATABASE_URL`,
//! or the local server `scripts/setup-services.sh` starts.

use anyhow::Context;
use tidings::postgres::sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use tidings::postgres::{PgOutboxOptions, PgOutboxStore};

use crate::env_or;

/// The database's URL: `DATABASE_URL`, or the local server's.
pub fn database_url() -> String {
    env_or("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test")
}

/// A store whose outbox and inbox live in `schema`, on a pool of
/// `max_connections` whose search path is that schema, so a service's own
/// statements name their tables plainly.
///
/// # Errors
///
/// When `DATABASE_URL` does not parse, the database cannot be reached, or
/// the store refuses the schema's name.
pub async fn store_in_schema(schema: &str, max_connections: u32) -> anyhow::Result<PgOutboxStore> {
    let url = database_url();
    let connect: PgConnectOptions = url.parse().context("DATABASE_URL")?;
    let pool = PgPoolOptions::new()
        .max_connections(max_connections)
        .connect_with(connect.options([("search_path", schema)]))
        .await
        .with_context(|| format!("connecting to {url}; run bash scripts/setup-services.sh"))?;
    Ok(PgOutboxStore::new(
        pool,
        PgOutboxOptions::new().schema(schema),
    )?)
}
