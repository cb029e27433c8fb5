//! How the store's statements run where a transaction pooler stands
//! between the pool and the server.
//!
//! A pooler in transaction mode (PgBouncer with `pool_mode = transaction`,
//! RDS Proxy, Supabase's pooler) lends a server session to a client for one
//! transaction, and may lend the next one another. Whatever lives in a
//! session outside a transaction is lost on the way or, worse, found by
//! another client: statements prepared by name (sqlx's `sqlx_s_1`, SQL
//! `PREPARE`), session `SET`s, session advisory locks, `LISTEN`. Even a
//! statement sqlx sends unnamed is at risk outside a transaction, as sqlx
//! parses it and binds it in two round trips, each ended by a `Sync`, and
//! the pooler may hand the session to another client between them.
//!
//! So under [`Pooling::Transaction`] every statement of the store is sent
//! unnamed (`persistent(false)`), and every statement that would run on
//! its own runs in a transaction of its own ([`Session`]). The two round
//! trips of one statement, and the `BEGIN` and `COMMIT` around it, then
//! reach one server session. The store opens no connection of its own:
//! locked claims hold one of the pool's connections in the batch's
//! transaction, and claim records and wake-up hints go through the pool.

use std::ops::{Deref, DerefMut};
use std::time::Duration;

use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgArguments, PgRow};
use sqlx::query::Query;
use sqlx::{Connection, PgConnection, PgPool, Postgres, Transaction};
use tidings_core::StoreError;

use crate::error::{POOLER_HINT, store_error};
use crate::{ClaimMode, PgOutboxOptions, PgOutboxStore};

/// How the store's pool reaches PostgreSQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pooling {
    /// Each of the pool's connections is a server session of its own:
    /// directly, or through a pooler in session mode (the default). The
    /// store prepares its statements by name and keeps a few connections
    /// of its own beside the pool (see the crate docs, *Connections*).
    #[default]
    Direct,
    /// Through a pooler in transaction mode, which may move a connection to
    /// another server session after every transaction: no statement is
    /// prepared by name, nothing is set or locked outside a transaction,
    /// and the store opens no connection beyond the pool. `LISTEN` needs a
    /// session of its own: give the listener a direct connection with
    /// [`listen_options`](crate::PgOutboxOptions::listen_options), or
    /// relays in other processes poll.
    Transaction,
}

/// A pooled connection for a statement outside the caller's transactions:
/// in a transaction of its own behind a transaction pooler, as is
/// otherwise.
pub(crate) enum Session {
    /// A pooled connection, each statement its own transaction.
    Plain(PoolConnection<Postgres>),
    /// A pooled connection in a transaction, which [`finish`](Self::finish)
    /// commits.
    Wrapped(Transaction<'static, Postgres>),
}

impl Session {
    /// Commits the transaction, if any; dropped unfinished, it rolls back.
    pub(crate) async fn finish(self) -> Result<(), sqlx::Error> {
        match self {
            Session::Plain(_) => Ok(()),
            Session::Wrapped(tx) => tx.commit().await,
        }
    }
}

impl Deref for Session {
    type Target = PgConnection;

    fn deref(&self) -> &PgConnection {
        match self {
            Session::Plain(conn) => conn,
            Session::Wrapped(tx) => tx,
        }
    }
}

impl DerefMut for Session {
    fn deref_mut(&mut self) -> &mut PgConnection {
        match self {
            Session::Plain(conn) => conn,
            Session::Wrapped(tx) => tx,
        }
    }
}

/// Refuses what cannot work behind a transaction pooler: locked claims
/// there hold pooled connections, and must leave the pool one for the
/// claim records their settles wait for.
pub(crate) fn check(pool: &PgPool, options: &PgOutboxOptions) -> Result<(), StoreError> {
    // A log-tailed outbox makes no claims.
    let pooled_locks = options.get_pooling() == Pooling::Transaction
        && options.get_claim_mode() == ClaimMode::Locked
        && options.get_log_tailing().is_none();
    let max = usize::try_from(pool.options().get_max_connections()).unwrap_or(usize::MAX);
    let claims = options.get_claim_connections();
    if pooled_locks && claims >= max {
        return Err(StoreError::Invalid(format!(
            "behind a transaction pooler, locked claims hold the pool's connections: \
             claim_connections ({claims}) must be below the pool's max_connections ({max}); \
             lower PgOutboxOptions::claim_connections, enlarge the pool, or use ClaimMode::Leased"
        )));
    }
    Ok(())
}

impl PgOutboxStore {
    /// Whether the store's statements may be prepared by name and kept on
    /// the connection: not behind a transaction pooler.
    pub(crate) fn persistent(&self) -> bool {
        self.options().get_pooling() == Pooling::Direct
    }

    /// A pooled connection for statements that commit on their own.
    pub(crate) async fn session(&self) -> Result<Session, sqlx::Error> {
        Ok(match self.options().get_pooling() {
            Pooling::Direct => Session::Plain(self.pool().acquire().await?),
            Pooling::Transaction => Session::Wrapped(self.pool().begin().await?),
        })
    }

    /// Runs `statement` on a session of its own, which is committed once
    /// the statement succeeded; what the statement returned.
    pub(crate) async fn alone<T>(
        &self,
        statement: impl AsyncFnOnce(&mut PgConnection) -> Result<T, sqlx::Error>,
    ) -> Result<T, StoreError> {
        let mut session = self.session().await.map_err(store_error)?;
        let done = statement(&mut session).await.map_err(store_error)?;
        session.finish().await.map_err(store_error)?;
        Ok(done)
    }

    /// Runs `query` on a session of its own; the rows it affected.
    pub(crate) async fn execute_alone(&self, query: PgQuery<'_>) -> Result<u64, StoreError> {
        let query = query.persistent(self.persistent());
        let done = self.alone(async |conn| query.execute(conn).await).await?;
        Ok(done.rows_affected())
    }

    /// Runs `query` on a session of its own; the rows it returned.
    pub(crate) async fn fetch_alone(&self, query: PgQuery<'_>) -> Result<Vec<PgRow>, StoreError> {
        let query = query.persistent(self.persistent());
        self.alone(async |conn| query.fetch_all(conn).await).await
    }
}

/// A statement with its arguments bound.
pub(crate) type PgQuery<'q> = Query<'q, Postgres, PgArguments>;

/// How long the probe for an unannounced pooler waits for its second
/// connection before giving up on the probe.
const PROBE_ACQUIRE: Duration = Duration::from_secs(2);

/// Finds a pooler in transaction mode that the store was not told about,
/// before a statement prepared by name meets another client's: on a
/// direct connection, or behind a pooler in session mode, a connection
/// keeps its server session for life, while a transaction pooler hands
/// the session one connection just left to the next client to ask. So
/// one connection reads its session, a second opens a transaction (and
/// is handed that session if a pooler stands between), and the first
/// reads its session again. Skipped behind [`Pooling::Transaction`], and
/// when the pool has no second connection to spare.
pub(crate) async fn detect_pooler(store: &PgOutboxStore) -> Result<(), StoreError> {
    let pool = store.pool();
    if store.options().get_pooling() == Pooling::Transaction
        || pool.options().get_max_connections() < 2
    {
        return Ok(());
    }
    let mut first = pool.acquire().await.map_err(store_error)?;
    let Ok(second) = tokio::time::timeout(PROBE_ACQUIRE, pool.acquire()).await else {
        return Ok(());
    };
    let mut second = second.map_err(store_error)?;
    let before = session_of(&mut first).await?;
    let mut held = second.begin().await.map_err(store_error)?;
    session_of(&mut held).await?;
    let after = session_of(&mut first).await?;
    held.commit().await.map_err(store_error)?;
    if before != after {
        return Err(StoreError::Misconfigured(format!(
            "one pooled connection reached server sessions {before} and {after} in turn: {POOLER_HINT}"
        )));
    }
    Ok(())
}

/// The server session `conn` reaches, read in a transaction of its own.
async fn session_of(conn: &mut PgConnection) -> Result<i32, StoreError> {
    let mut tx = conn.begin().await.map_err(store_error)?;
    let pid = sqlx::query_scalar(include_str!("../sql/pooling/backend_pid.sql"))
        .persistent(false)
        .fetch_one(&mut *tx)
        .await
        .map_err(store_error)?;
    tx.commit().await.map_err(store_error)?;
    Ok(pid)
}
