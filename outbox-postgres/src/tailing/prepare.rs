//! What `migrate` does for log tailing: the publication, the slot and the
//! slot's first recorded position.

use sqlx::Row;
use tidings_core::StoreError;
use tracing::info;

use super::TailMode;
use crate::PgOutboxStore;
use crate::error::store_error;
use crate::pooling::PgQuery;

impl PgOutboxStore {
    /// Creates the publication and the slot of the store's log tailing
    /// where they are missing, and records the slot, its mode and where it
    /// starts unless it is recorded already.
    pub(crate) async fn prepare_tailing(&self) -> Result<(), StoreError> {
        let (tailing, sql) = self.tailing()?;
        let names = &self.inner().names;
        let found = sqlx::query(sql.publication_found.clone())
            .bind(&tailing.publication)
            .bind(&names.schema)
            .bind(&names.outbox);
        let (found, publishes): (bool, bool) = match self.first_row(found).await? {
            Some(row) => (
                row.try_get(0).map_err(store_error)?,
                row.try_get(1).map_err(store_error)?,
            ),
            None => (false, false),
        };
        if !found {
            if self
                .create_once(sqlx::query(sql.create_publication.clone()))
                .await?
            {
                info!(publication = %tailing.publication, "publication created");
            }
        } else if tailing.mode == TailMode::Table && !publishes {
            return Err(StoreError::Schema(format!(
                "the publication {} exists and does not publish the inserts of {}.{}; \
                 add the table to it or name another publication",
                tailing.publication, names.schema, names.outbox
            )));
        }
        if self.slot_state().await?.is_none() {
            let create = sqlx::query(sql.create_slot.clone()).bind(&tailing.slot);
            if self.create_once(create).await? {
                info!(slot = %tailing.slot, "replication slot created");
            }
        }
        if let Some(state) = self.slot_state().await? {
            self.record_first_position(state.confirmed).await?;
        }
        Ok(())
    }

    /// Fails with [`StoreError::Misconfigured`] unless the server decodes
    /// its log (`wal_level = logical`), before `migrate` changes anything.
    pub(crate) async fn check_wal_level(&self) -> Result<(), StoreError> {
        let (_, sql) = self.tailing()?;
        let level: String = self
            .first_row(sqlx::query(sql.wal_level.clone()))
            .await?
            .map_or(Ok(String::new()), |row| row.try_get(0))
            .map_err(store_error)?;
        if level == "logical" {
            return Ok(());
        }
        Err(StoreError::Misconfigured(format!(
            "log tailing needs wal_level = logical, the server has {level}: set it in \
             postgresql.conf (or the provider's parameter group) and restart the server"
        )))
    }

    /// Runs a statement creating something, on a session of its own;
    /// false where another process created it first.
    async fn create_once(&self, create: PgQuery<'_>) -> Result<bool, StoreError> {
        let mut session = self.session().await.map_err(store_error)?;
        match create
            .persistent(self.persistent())
            .execute(&mut *session)
            .await
        {
            Ok(_) => {
                session.finish().await.map_err(store_error)?;
                Ok(true)
            }
            Err(e) if is_duplicate(&e) => Ok(false),
            Err(e) => Err(store_error(e)),
        }
    }
}

/// Whether `error` says the object exists already: another process
/// created it first.
fn is_duplicate(error: &sqlx::Error) -> bool {
    let code = error.as_database_error().and_then(|e| e.code());
    matches!(code.as_deref(), Some("42710"))
}
