//! Locked batches on the store's own connections ([`connections`]), where
//! the pool reaches PostgreSQL directly.
//!
//! A claim opens its batch's transaction, then runs its statement, which
//! sqlx keeps prepared on the connection, in the extended protocol: its
//! rows come back in the binary format, which costs the server less to
//! write and the relay less to read than text. A settle of published rows
//! goes out together with its `COMMIT`, prepared by name (`PREPARE`), in
//! one round trip of the simple protocol, which takes no parameters:
//! values are written into the script by [`literal`]. No statement is
//! planned again.
//!
//! While claims come back full, a backlog's, the settle's round trip also
//! begins the next claim's transaction on its connection, so that claim
//! goes straight to its statement: two round trips a batch instead of
//! three, and the claims, which follow one another, each a round trip
//! shorter. Such a transaction takes no snapshot and holds nothing until
//! its claim runs; it is bounded by the lease like any other, and is
//! rolled back once a claim comes back short, so none is left open after
//! a backlog is drained.
//!
//! [`connections`]: super::connections
//! [`literal`]: super::literal

use std::time::Duration;

use sqlx::{AssertSqlSafe, SqlStr};
use tidings_core::{ClaimRequest, Route, StoreError};
use uuid::Uuid;

use crate::PgOutboxStore;
use crate::claim::connections::ClaimConnection;
use crate::claim::literal;
use crate::claim::outcomes::{self, OutcomeColumns, Settled, settle_locked};
use crate::claim::records;
use crate::claim::row::{ClaimedRow, RowDecoder};
use crate::claim::statements::{ClaimFrom, begin_statement, locked_claim};
use crate::claim::unreadable::Unreadable;
use crate::error::{is_stale, store_error};

/// The names the settle statements are prepared under on a claim
/// connection.
const SETTLE_PUBLISHED: &str = "tidings_settle_published";
const SETTLE_PUBLISHED_KEPT: &str = "tidings_settle_published_kept";

/// Opens a batch's transaction on one of the store's connections, unless
/// the last settle on it began one ahead, and locks up to `limit`
/// claimable rows of `route` in it, starting `from` where the claim says;
/// returns the rows decoded as they arrived, and those that could not be
/// read.
pub(crate) async fn claim(
    store: &PgOutboxStore,
    request: &ClaimRequest<'_>,
    from: ClaimFrom,
) -> Result<(ClaimConnection, Vec<ClaimedRow>, Unreadable), StoreError> {
    let (route, limit, lease) = (request.route, request.limit, request.lease);
    let inner = store.inner();
    let sql = inner.sql.claim.locked(route, limit, store.skipped_slot());
    let mut connection = inner.claims.take(&inner.pool, lease).await?;
    let decoded = match run_claim(&mut connection, &sql, route, lease, from.clone(), limit).await {
        Ok(decoded) => decoded,
        // A connection kept idle may have been closed meanwhile, say by a
        // server restart, or its transaction begun ahead ended by the
        // server past its lease; then the idle ones are let go and the
        // claim runs once more on a new one.
        Err(error) if connection.reused() && is_stale(&error) => {
            drop(connection);
            inner.claims.forget_idle();
            connection = inner.claims.take(&inner.pool, lease).await?;
            let decoded = run_claim(&mut connection, &sql, route, lease, from, limit).await;
            decoded.map_err(store_error)?
        }
        Err(error) => return Err(store_error(error)),
    };
    let (rows, unreadable) = decoded.finish()?;
    let full = rows.len() >= limit;
    for begun in inner.claims.claimed(full) {
        put_back_closed(store, begun).await;
    }
    Ok((connection, rows, unreadable))
}

/// Opens the batch's transaction on `connection`, or takes the one begun
/// ahead there, and runs the claim `sql` in it, kept prepared on the
/// connection, decoding the rows of a claim of up to `limit` as they
/// arrive.
async fn run_claim(
    connection: &mut ClaimConnection,
    sql: &SqlStr,
    route: &Route,
    lease: Duration,
    from: ClaimFrom,
    limit: usize,
) -> Result<RowDecoder, sqlx::Error> {
    let begin = match connection.begun.take() {
        Some(begun) if begun == lease => None,
        Some(_) => Some(format!("rollback; {}", begin_statement(lease))),
        None => Some(begin_statement(lease)),
    };
    let conn = connection.conn();
    if let Some(begin) = begin {
        sqlx::raw_sql(AssertSqlSafe(begin))
            .execute(&mut *conn)
            .await?;
    }
    let query = locked_claim(sql.clone(), route, from).persistent(true);
    RowDecoder::read(limit, query.fetch(conn)).await
}

/// Ends a claim that took no rows, keeping the connection for the next.
pub(crate) async fn release(
    store: &PgOutboxStore,
    mut connection: ClaimConnection,
) -> Result<(), StoreError> {
    sqlx::raw_sql("rollback")
        .execute(connection.conn())
        .await
        .map_err(store_error)?;
    store.inner().claims.put_back(connection);
    Ok(())
}

/// Runs the settle statement for rows `ids`, which also deletes the claim
/// record `token`, in the open transaction on `connection`, and commits;
/// returns what the statement sent back. A batch whose every row was
/// published, the common case, is settled and committed in one round
/// trip, which also begins the next claim's transaction, with `lease`,
/// while claims come back full. The connection is kept for the next batch
/// once committed, and closed after a failure.
pub(crate) async fn settle(
    store: &PgOutboxStore,
    mut connection: ClaimConnection,
    columns: &OutcomeColumns,
    ids: &[i64],
    token: Uuid,
    lease: Duration,
) -> Result<Settled, StoreError> {
    let inner = store.inner();
    let settled = if columns.is_empty() {
        records::release(store, connection.conn(), token).await?;
        Settled::Rows(Vec::new())
    } else if columns.all_published() {
        let (name, statement) = match store.delete_on_publish() {
            true => (SETTLE_PUBLISHED, &inner.sql.settle_locked_published),
            false => (
                SETTLE_PUBLISHED_KEPT,
                &inner.sql.settle_locked_published_kept,
            ),
        };
        let ahead = inner.claims.in_backlog().then_some(lease);
        let begin = ahead.map_or_else(String::new, begin_statement);
        let (first, last) = records::id_ranges(ids);
        let script = format!(
            "execute {name}({}, {}, {}, {});\ncommit;\n{begin}",
            literal::bigints(&first),
            literal::bigints(&last),
            literal::uuid(token),
            ids.len()
        );
        let statements = [(name, statement.as_str())];
        let rows = connection.run(&statements, script).await;
        let settled = outcomes::published(&rows.map_err(store_error)?)?;
        connection.begun = ahead;
        put_back(store, connection).await;
        return Ok(settled);
    } else {
        Settled::Rows(settle_locked(store, connection.conn(), columns, ids, token).await?)
    };
    let committed = sqlx::raw_sql("commit").execute(connection.conn()).await;
    committed.map_err(store_error)?;
    inner.claims.put_back(connection);
    Ok(settled)
}

/// Keeps `connection` for the next batch, with the transaction begun
/// ahead on it while claims come back full, rolled back otherwise.
async fn put_back(store: &PgOutboxStore, connection: ClaimConnection) {
    let claims = &store.inner().claims;
    let connection = match connection.begun {
        Some(_) => match claims.put_back_begun(connection) {
            Ok(()) => return,
            Err(connection) => connection,
        },
        None => connection,
    };
    put_back_closed(store, connection).await;
}

/// Rolls back any transaction begun ahead on `connection` and keeps it for
/// the next batch; closes it if the rollback fails.
async fn put_back_closed(store: &PgOutboxStore, mut connection: ClaimConnection) {
    if connection.begun.is_some() {
        if sqlx::raw_sql("rollback")
            .execute(connection.conn())
            .await
            .is_err()
        {
            return;
        }
        connection.begun = None;
    }
    store.inner().claims.put_back(connection);
}
