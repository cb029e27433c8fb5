//! The connections of the store's own, outside the pool: those locked
//! claims run on, and the one their claim records are written on.
//!
//! A locked batch keeps its connection from the claim to the settle. Taken
//! from the pool, every batch would also pay the pool's check of the
//! connection on the way out and again on the way back: two round trips
//! beside the claim's and the settle's own. These connections are opened
//! with the pool's settings and kept between batches, with the claim and
//! settle statements prepared on them: a claim as sqlx keeps its
//! statements, so its rows come back in the binary format, and a settle
//! by name (`PREPARE`), so it goes out together with its `COMMIT` in one
//! round trip of the simple protocol. Neither is planned again.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sqlx::postgres::{PgArguments, PgRow};
use sqlx::query::Query;
use sqlx::{AssertSqlSafe, ConnectOptions, PgConnection, PgPool, Postgres};
use tidings_core::StoreError;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::store_error;

/// The statements sqlx keeps prepared on a claim connection, its own
/// default: a store's claims come in a few kinds and sizes.
const CACHED_STATEMENTS: usize = 100;

/// Up to a set number of connections in use at once, and the idle ones.
#[derive(Debug)]
pub(crate) struct ClaimConnections {
    idle: Mutex<Idle>,
    permits: Arc<Semaphore>,
}

/// The idle connections, and whether the last claim came back full, so
/// another is likely to follow at once: only then may an idle connection
/// keep a transaction begun ahead for it (see [`ClaimConnection::begun`]).
#[derive(Debug, Default)]
struct Idle {
    connections: Vec<ClaimConnection>,
    backlog: bool,
}

/// The connection claim records are written on: opened from the pool's
/// settings on first use, kept between records and dropped after a
/// failure, so the next record connects afresh.
///
/// It is kept apart on purpose. A batch holds its claim connection until
/// it settles, and its settle waits for its record; were records written
/// on connections that batches hold, batches holding all of them would
/// each wait for a connection none of them gives back. Nor does it take
/// one from the pool, which the user's own transactions may fill. Behind a
/// transaction pooler, where the store opens no connection of its own,
/// records go through the pool, of which locked claims leave one free.
#[derive(Debug, Default)]
pub(crate) struct RecordConnection {
    slot: tokio::sync::Mutex<Option<PgConnection>>,
}

/// A connection of [`ClaimConnections`], with the names of the statements
/// prepared on it.
#[derive(Debug)]
pub(crate) struct ClaimConnection {
    conn: PgConnection,
    prepared: HashSet<String>,
    /// Whether it served a batch before this one.
    reused: bool,
    /// The lease of the transaction the last settle on this connection
    /// began ahead for the next claim, in the same round trip as its
    /// commit, while claims came back full: that claim then goes straight
    /// to its statement. `None` outside any transaction.
    pub(crate) begun: Option<Duration>,
    /// Held while the connection is in use.
    permit: Option<OwnedSemaphorePermit>,
}

impl ClaimConnections {
    /// Room for `max` connections in use at once (at least one).
    pub(crate) fn new(max: usize) -> Self {
        Self {
            idle: Mutex::default(),
            permits: Arc::new(Semaphore::new(max.max(1))),
        }
    }

    /// An idle connection, one with a transaction begun ahead with
    /// `lease` first, or a new one opened with `pool`'s settings; waits
    /// while the most allowed are in use.
    pub(crate) async fn take(
        &self,
        pool: &PgPool,
        lease: Duration,
    ) -> Result<ClaimConnection, StoreError> {
        let permit = self.permit().await?;
        if let Some(mut idle) = self.lock().take(lease) {
            idle.permit = Some(permit);
            return Ok(idle);
        }
        // Claims stay prepared in sqlx's statement cache on the connection
        // (see `own`). Without a cache, sqlx would prepare a new named
        // statement for every claim and never close it, so the cache is on
        // here whatever the pool's settings say.
        let options = pool.connect_options().as_ref().clone();
        let options = options.statement_cache_capacity(CACHED_STATEMENTS);
        let conn = options.connect().await.map_err(store_error)?;
        Ok(ClaimConnection {
            conn,
            prepared: HashSet::new(),
            reused: false,
            begun: None,
            permit: Some(permit),
        })
    }

    /// A place among the connections in use, for a locked batch holding one
    /// of the pool's connections instead (behind a transaction pooler);
    /// waits while the most allowed are in use.
    pub(crate) async fn permit(&self) -> Result<OwnedSemaphorePermit, StoreError> {
        Arc::clone(&self.permits)
            .acquire_owned()
            .await
            .map_err(|closed| StoreError::Backend(closed.into()))
    }

    /// Keeps `connection`, outside any transaction, for the next batch.
    pub(crate) fn put_back(&self, connection: ClaimConnection) {
        debug_assert!(connection.begun.is_none(), "kept in a transaction");
        self.lock().keep(connection);
    }

    /// Keeps `connection`, with a transaction [`begun`](ClaimConnection::begun)
    /// ahead, for the next claim while claims come back full; gives it back
    /// otherwise, for the caller to roll back.
    pub(crate) fn put_back_begun(
        &self,
        connection: ClaimConnection,
    ) -> Result<(), ClaimConnection> {
        let mut idle = self.lock();
        if !idle.backlog {
            return Err(connection);
        }
        idle.keep(connection);
        Ok(())
    }

    /// Whether the last locked claim came back full, so another is likely
    /// to follow at once: a settle may begin its transaction ahead, and it
    /// is worth a task of its own.
    pub(crate) fn in_backlog(&self) -> bool {
        self.lock().backlog
    }

    /// Notes whether the last claim came back `full`. After a short one,
    /// takes out the idle connections with a transaction begun ahead, for
    /// the caller to roll back: no claim may follow for a long while.
    pub(crate) fn claimed(&self, full: bool) -> Vec<ClaimConnection> {
        let mut idle = self.lock();
        idle.backlog = full;
        match full {
            true => Vec::new(),
            false => idle.take_begun(),
        }
    }

    /// Closes every idle connection, as after one of them was found broken:
    /// the others most likely went with it.
    pub(crate) fn forget_idle(&self) {
        self.lock().connections.clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Idle> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Idle {
    /// Keeps `connection` idle, letting its place among those in use go.
    fn keep(&mut self, mut connection: ClaimConnection) {
        connection.permit = None;
        connection.reused = true;
        self.connections.push(connection);
    }

    /// The idle connection to claim on with `lease`: one with a transaction
    /// begun ahead with that lease, else one outside any transaction, else
    /// the last kept.
    fn take(&mut self, lease: Duration) -> Option<ClaimConnection> {
        let connections = &mut self.connections;
        let matching = connections.iter().rposition(|c| c.begun == Some(lease));
        let found = matching.or_else(|| connections.iter().rposition(|c| c.begun.is_none()));
        match found {
            Some(index) => Some(connections.swap_remove(index)),
            None => connections.pop(),
        }
    }

    /// Takes out the connections with a transaction begun ahead.
    fn take_begun(&mut self) -> Vec<ClaimConnection> {
        let (begun, closed) = std::mem::take(&mut self.connections)
            .into_iter()
            .partition(|c| c.begun.is_some());
        self.connections = closed;
        begun
    }
}

impl RecordConnection {
    /// Runs `query`, opening the connection with `pool`'s settings first
    /// if need be; after a failure the connection is dropped, so the next
    /// query connects afresh.
    pub(crate) async fn execute(
        &self,
        pool: &PgPool,
        query: Query<'_, Postgres, PgArguments>,
    ) -> Result<(), StoreError> {
        let mut slot = self.slot.lock().await;
        let connection = match slot.as_mut() {
            Some(connection) => connection,
            None => {
                let opened = pool.connect_options().connect().await;
                slot.insert(opened.map_err(store_error)?)
            }
        };
        if let Err(error) = query.execute(connection).await {
            *slot = None;
            return Err(store_error(error));
        }
        Ok(())
    }
}

impl ClaimConnection {
    /// Whether the connection served an earlier batch, so a failure to
    /// reach the server may only mean it went stale while idle.
    pub(crate) fn reused(&self) -> bool {
        self.reused
    }

    /// The connection, for statements of the extended protocol.
    pub(crate) fn conn(&mut self) -> &mut PgConnection {
        &mut self.conn
    }

    /// Prepares each of `statements` (name and text) not yet prepared here,
    /// then runs `script`, which may execute them, in one round trip of the
    /// simple protocol; returns the rows it produced, in text format.
    /// `script` must be built only of the store's own statements and of
    /// literals written by [`crate::claim::literal`].
    pub(crate) async fn run(
        &mut self,
        statements: &[(&str, &str)],
        script: String,
    ) -> Result<Vec<PgRow>, sqlx::Error> {
        let mut prepare = String::new();
        for (name, text) in statements {
            if !self.prepared.contains(*name) {
                prepare.push_str(&format!("prepare {name} as\n{text}\n;\n"));
            }
        }
        if !prepare.is_empty() {
            sqlx::raw_sql(AssertSqlSafe(prepare))
                .execute(&mut self.conn)
                .await?;
            self.prepared
                .extend(statements.iter().map(|(name, _)| (*name).to_owned()));
        }
        sqlx::raw_sql(AssertSqlSafe(script))
            .fetch_all(&mut self.conn)
            .await
    }
}
