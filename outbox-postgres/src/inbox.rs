//! The consumer's side: the inbox, recorded in the handler's transaction.

use std::time::Duration;

use tidings_core::port::caused_by;
use tidings_core::{Attempts, InboxError, InboxMark, InboxStore};
use tracing::{debug, instrument};
use uuid::Uuid;

use crate::error::{CommitError, inbox_error};
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
/// write there; see [`InboxStore`]'s section on attempts.
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

    #[instrument(
        skip_all,
        fields(db.system = "postgresql", messaging.consumer.group.name = consumer, messaging.message.id = %event_id),
        err
    )]
    async fn mark(
        &self,
        tx: &mut PgContext<'static>,
        consumer: &str,
        event_id: Uuid,
    ) -> Result<InboxMark, InboxError> {
        InboxError::check_consumer(consumer)?;
        let inserted = sqlx::query(self.store.inner().sql.inbox_mark.clone())
            .persistent(self.store.persistent())
            .bind(consumer)
            .bind(event_id)
            .execute(tx.tx())
            .await
            .map_err(inbox_error)?
            .rows_affected();
        let mark = InboxMark::inserted(inserted == 1, ());
        debug!(?mark, "inbox mark");
        Ok(mark)
    }

    async fn commit(&self, tx: PgContext<'static>) -> Result<(), InboxError> {
        tx.commit().await.map_err(CommitError::into_inbox_error)
    }

    async fn rollback(&self, tx: PgContext<'static>) -> Result<(), InboxError> {
        tx.rollback().await.map_err(InboxError::from)
    }

    #[instrument(
        skip_all,
        fields(db.system = "postgresql", messaging.consumer.group.name = consumer),
        err
    )]
    async fn purge_older_than(
        &self,
        consumer: &str,
        age: Duration,
        limit_rows: usize,
    ) -> Result<u64, InboxError> {
        InboxError::check_consumer(consumer)?;
        let store = &self.store;
        let mut session = store.session().await.map_err(inbox_error)?;
        let purged: i64 = sqlx::query_scalar(store.inner().sql.inbox_purge.clone())
            .persistent(store.persistent())
            .bind(consumer)
            .bind(micros(age))
            .bind(limit(limit_rows))
            .fetch_one(&mut *session)
            .await
            .map_err(inbox_error)?;
        session.finish().await.map_err(inbox_error)?;
        Ok(u64::try_from(purged).unwrap_or_default())
    }

    #[instrument(
        skip_all,
        fields(db.system = "postgresql", messaging.consumer.group.name = consumer, messaging.message.id = %event_id),
        err
    )]
    async fn start_attempt(
        &self,
        consumer: &str,
        event_id: Uuid,
    ) -> Result<Option<Attempts>, InboxError> {
        InboxError::check_consumer(consumer)?;
        let statement = self.store.inner().sql.inbox_attempt_start.clone();
        let attempts = self.attempt_count(statement, consumer, event_id).await?;
        debug!(?attempts, "attempt started");
        Ok(Some(attempts))
    }

    #[instrument(
        skip_all,
        fields(db.system = "postgresql", messaging.consumer.group.name = consumer, messaging.message.id = %event_id),
        err
    )]
    async fn attempts(
        &self,
        consumer: &str,
        event_id: Uuid,
    ) -> Result<Option<Attempts>, InboxError> {
        InboxError::check_consumer(consumer)?;
        let statement = self.store.inner().sql.inbox_attempts.clone();
        let attempts = self.attempt_count(statement, consumer, event_id).await?;
        Ok(Some(attempts))
    }

    #[instrument(
        skip_all,
        fields(db.system = "postgresql", messaging.consumer.group.name = consumer, messaging.message.id = %event_id),
        err
    )]
    async fn finish_attempt(
        &self,
        consumer: &str,
        event_id: Uuid,
        start_counted: bool,
    ) -> Result<(), InboxError> {
        InboxError::check_consumer(consumer)?;
        let store = &self.store;
        let mut session = store.session().await.map_err(inbox_error)?;
        sqlx::query(store.inner().sql.inbox_attempt_finish.clone())
            .persistent(store.persistent())
            .bind(consumer)
            .bind(event_id)
            .bind(i32::from(!start_counted))
            .execute(&mut *session)
            .await
            .map_err(inbox_error)?;
        session.finish().await.map_err(inbox_error)?;
        Ok(())
    }

    async fn clear_attempts(
        &self,
        tx: &mut PgContext<'static>,
        consumer: &str,
        event_id: Uuid,
    ) -> Result<(), InboxError> {
        InboxError::check_consumer(consumer)?;
        sqlx::query(self.store.inner().sql.inbox_attempt_clear.clone())
            .persistent(self.store.persistent())
            .bind(consumer)
            .bind(event_id)
            .execute(tx.tx())
            .await
            .map_err(inbox_error)?;
        Ok(())
    }
}

impl PgInboxStore {
    /// Runs `statement` on `(consumer, event_id)` in a statement of its
    /// own, committed at once, and reads the attempt count it returns:
    /// none counted where it returns no row.
    async fn attempt_count(
        &self,
        statement: sqlx::SqlStr,
        consumer: &str,
        event_id: Uuid,
    ) -> Result<Attempts, InboxError> {
        let store = &self.store;
        let mut session = store.session().await.map_err(inbox_error)?;
        let row: Option<(i32, i32)> = sqlx::query_as(statement)
            .persistent(store.persistent())
            .bind(consumer)
            .bind(event_id)
            .fetch_optional(&mut *session)
            .await
            .map_err(inbox_error)?;
        session.finish().await.map_err(inbox_error)?;
        let (started, finished) = row.unwrap_or_default();
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
