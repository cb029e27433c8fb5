//! The consumer's side: the inbox, recorded in the handler's transaction.

use std::time::Duration;

use sqlx::Row;
use tidings_core::port::caused_by;
use tidings_core::{
    Attempts, CommitFailure, ConsumerName, InboxAttempts, InboxError, InboxKey, InboxMark,
    InboxPurge, InboxStore, IsolationLevel,
};
use tracing::debug;

use crate::error::inbox_error;
use crate::params::{limit, micros};
use crate::{PgContext, PgOutboxStore};

/// The inbox on PostgreSQL: `(consumer, event_id)` rows written in the
/// handler's own transaction, a [`PgContext`], so the handler's writes, the
/// events it stages and the mark commit together.
///
/// Handler attempts that have not committed are counted in a table beside
/// it, `<inbox table>_attempts`: a start in a statement that commits on its
/// own (so it outlives the handler's process), the count deleted in the
/// handler's transaction when it commits. Only redeliveries and failures
/// write there; see [`InboxAttempts`].
///
/// Made by [`PgOutboxStore::inbox`]; the tables are created by
/// [`PgOutboxStore::migrate`].
#[derive(Debug, Clone)]
pub struct PgInboxStore {
    store: PgOutboxStore,
}

impl PgInboxStore {
    pub(crate) fn new(store: PgOutboxStore) -> Self {
        Self { store }
    }

    /// The store whose pool and tables this inbox uses.
    pub fn store(&self) -> &PgOutboxStore {
        &self.store
    }
}

impl InboxStore for PgInboxStore {
    type Tx = PgContext<'static>;

    async fn begin(&self) -> Result<PgContext<'static>, InboxError> {
        self.store.begin().await.map_err(InboxError::from)
    }

    /// `SET TRANSACTION ISOLATION LEVEL` as the transaction's first
    /// statement. A serialization failure later is a transient error.
    async fn begin_at(&self, level: IsolationLevel) -> Result<PgContext<'static>, InboxError> {
        let mut ctx = self.begin().await?;
        let set = format!("SET TRANSACTION ISOLATION LEVEL {}", level.sql());
        sqlx::raw_sql(sqlx::AssertSqlSafe(set))
            .execute(ctx.tx())
            .await
            .map_err(inbox_error)?;
        Ok(ctx)
    }

    fn offers_isolation(&self, _level: IsolationLevel) -> bool {
        true
    }

    /// Constraint violations (SQLSTATE class 23) and data errors (class 22)
    /// anywhere in the error's chain: the same statement on the same data
    /// fails the same way.
    fn is_permanent(&self, error: &(dyn std::error::Error + 'static)) -> bool {
        caused_by::<sqlx::Error>(error, |e| {
            let sqlx::Error::Database(db) = e else {
                return false;
            };
            db.code()
                .is_some_and(|code| code.starts_with("23") || code.starts_with("22"))
        })
    }

    async fn mark(
        &self,
        tx: &mut PgContext<'static>,
        key: InboxKey<'_>,
    ) -> Result<InboxMark, InboxError> {
        let inserted = sqlx::query(self.store.inner().sql.inbox_mark.clone())
            .persistent(self.store.persistent())
            .bind(key.consumer())
            .bind(key.event_id())
            .execute(tx.tx())
            .await
            .map_err(inbox_error)?
            .rows_affected();
        let mark = InboxMark::inserted(inserted == 1, ());
        debug!(?mark, "inbox mark");
        Ok(mark)
    }

    async fn commit(&self, tx: PgContext<'static>) -> Result<(), InboxError> {
        tx.commit().await.map_err(CommitFailure::into_inbox_error)
    }

    async fn rollback(&self, tx: PgContext<'static>) -> Result<(), InboxError> {
        tx.rollback().await.map_err(InboxError::from)
    }
}

impl InboxAttempts for PgInboxStore {
    async fn start_attempt(&self, key: InboxKey<'_>) -> Result<Option<Attempts>, InboxError> {
        let statement = self.store.inner().sql.inbox_attempt_start.clone();
        let attempts = self.attempt_count(statement, key).await?;
        debug!(?attempts, "attempt started");
        Ok(Some(attempts))
    }

    async fn attempts(&self, key: InboxKey<'_>) -> Result<Option<Attempts>, InboxError> {
        let statement = self.store.inner().sql.inbox_attempts.clone();
        Ok(Some(self.attempt_count(statement, key).await?))
    }

    async fn finish_attempt(
        &self,
        key: InboxKey<'_>,
        start_counted: bool,
    ) -> Result<(), InboxError> {
        let query = sqlx::query(self.store.inner().sql.inbox_attempt_finish.clone())
            .bind(key.consumer())
            .bind(key.event_id())
            .bind(i32::from(!start_counted));
        self.store.execute_alone(query).await?;
        Ok(())
    }

    async fn clear_attempts(
        &self,
        tx: &mut PgContext<'static>,
        key: InboxKey<'_>,
    ) -> Result<(), InboxError> {
        sqlx::query(self.store.inner().sql.inbox_attempt_clear.clone())
            .persistent(self.store.persistent())
            .bind(key.consumer())
            .bind(key.event_id())
            .execute(tx.tx())
            .await
            .map_err(inbox_error)?;
        Ok(())
    }
}

impl InboxPurge for PgInboxStore {
    async fn purge_older_than(
        &self,
        consumer: &ConsumerName,
        age: Duration,
        limit_rows: usize,
    ) -> Result<u64, InboxError> {
        let query = sqlx::query(self.store.inner().sql.inbox_purge.clone())
            .bind(consumer.as_str())
            .bind(micros(age))
            .bind(limit(limit_rows));
        let rows = self.store.fetch_alone(query).await?;
        let purged: i64 = match rows.first() {
            Some(row) => row.try_get(0).map_err(inbox_error)?,
            None => 0,
        };
        Ok(u64::try_from(purged).unwrap_or_default())
    }
}

impl PgInboxStore {
    /// Runs `statement` on the key in a statement of its own, committed at
    /// once, and reads the attempt count it returns: none counted where it
    /// returns no row.
    async fn attempt_count(
        &self,
        statement: sqlx::SqlStr,
        key: InboxKey<'_>,
    ) -> Result<Attempts, InboxError> {
        let query = sqlx::query(statement)
            .bind(key.consumer())
            .bind(key.event_id());
        let rows = self.store.fetch_alone(query).await?;
        let Some(row) = rows.first() else {
            return Ok(Attempts::default());
        };
        let (started, finished): (i32, i32) = (
            row.try_get(0).map_err(inbox_error)?,
            row.try_get(1).map_err(inbox_error)?,
        );
        Ok(Attempts {
            started: count(started),
            finished: count(finished),
        })
    }
}

/// A stored count, never negative.
fn count(stored: i32) -> u32 {
    u32::try_from(stored).unwrap_or_default()
}
