//! A snapshot held open, as a forgotten `REPEATABLE READ` transaction or a
//! long report holds one: while it lives, PostgreSQL keeps every row
//! version deleted after it began, so vacuum removes none of the rows the
//! relay deletes, and their index entries stay for every claim to step
//! over.

use sqlx::{AssertSqlSafe, ConnectOptions, PgConnection};
use tidings_postgres::PgOutboxStore;

use crate::env::{connect_options, outbox_table, table_in};

/// A `REPEATABLE READ` transaction on a connection of its own, with its
/// snapshot taken and a transaction id assigned.
pub(super) struct Snapshot {
    connection: PgConnection,
}

impl Snapshot {
    /// Opens the transaction and takes its snapshot with a first
    /// statement; `txid_current()` gives it a transaction id as well, as a
    /// transaction that wrote something would have. It reads none of the
    /// outbox's tables, as a report on the service's own tables would not:
    /// a transaction that has read the outbox also holds a lock on it,
    /// which keeps a rotated outbox from truncating its slots until it
    /// ends.
    /// It opens on the server at `url`.
    pub(super) async fn hold(url: &str) -> anyhow::Result<Self> {
        let mut connection = connect_options(url)?
            .application_name("tidings-bench-pinned")
            .connect()
            .await?;
        sqlx::raw_sql("begin isolation level repeatable read")
            .execute(&mut connection)
            .await?;
        sqlx::query("select txid_current()")
            .execute(&mut connection)
            .await?;
        Ok(Self { connection })
    }

    /// Ends the transaction and closes its connection.
    pub(super) async fn release(mut self) -> anyhow::Result<()> {
        sqlx::raw_sql("rollback")
            .execute(&mut self.connection)
            .await?;
        Ok(())
    }

    /// Runs `work` with a snapshot held on the server at `url` throughout
    /// if `pin`, as [`hold`](Self::hold) takes it.
    pub(super) async fn held_if<T>(
        pin: bool,
        url: &str,
        work: impl Future<Output = T>,
    ) -> anyhow::Result<T> {
        let snapshot = match pin {
            true => Some(Self::hold(url).await?),
            false => None,
        };
        let done = work.await;
        if let Some(snapshot) = snapshot {
            snapshot.release().await?;
        }
        Ok(done)
    }
}

/// Dead row versions in the table `name` beside the store's outbox, as a
/// fresh `ANALYZE` counts them.
pub(super) async fn dead_tuples_in(store: &PgOutboxStore, name: &str) -> anyhow::Result<i64> {
    let sql = format!("analyze {}", table_in(store, name));
    sqlx::query(AssertSqlSafe(sql))
        .execute(store.pool())
        .await?;
    let dead: i64 = sqlx::query_scalar(
        "select coalesce(sum(n_dead_tup), 0)::bigint from pg_stat_user_tables \
         where schemaname = $1 and relname = $2",
    )
    .bind(store.options().get_schema())
    .bind(name)
    .fetch_one(store.pool())
    .await?;
    Ok(dead)
}

/// Dead row versions in the store's outbox, its slots' in a rotated one,
/// as a fresh `ANALYZE` counts them (it samples the table; vacuum cannot
/// remove them yet if a snapshot still needs them).
pub(super) async fn dead_tuples(store: &PgOutboxStore) -> anyhow::Result<i64> {
    let sql = format!("analyze {}", outbox_table(store));
    sqlx::query(AssertSqlSafe(sql))
        .execute(store.pool())
        .await?;
    let options = store.options();
    let dead: i64 = sqlx::query_scalar(
        "select coalesce(sum(n_dead_tup), 0)::bigint from pg_stat_user_tables \
         where schemaname = $1 and (relname = $2 or relname like $2 || '\\_slot\\_%')",
    )
    .bind(options.get_schema())
    .bind(options.get_table())
    .fetch_one(store.pool())
    .await?;
    Ok(dead)
}
