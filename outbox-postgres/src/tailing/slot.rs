//! The slot, the publication and the recorded position of a log-tailing
//! store, and the statements that write its events' outcomes.

use sqlx::{AssertSqlSafe, Row, SqlSafeStr, SqlStr};
use tidings_core::StoreError;
use tracing::info;

use std::borrow::Cow;

use super::{LogTailing, TailMode, Tailing};
use crate::PgOutboxStore;
use crate::error::store_error;
use crate::names::TableNames;

/// The statements of log tailing, rendered once; those of the reader and
/// its settling are read only with the `wal` feature.
#[derive(Debug, Clone)]
#[cfg_attr(not(feature = "wal"), allow(dead_code))]
pub(crate) struct TailStatements {
    pub(crate) wal_level: SqlStr,
    pub(crate) publication_found: SqlStr,
    pub(crate) create_publication: SqlStr,
    pub(crate) create_slot: SqlStr,
    pub(crate) slot_state: SqlStr,
    pub(crate) position: SqlStr,
    pub(crate) record_position: SqlStr,
    pub(crate) reset_position: SqlStr,
    pub(crate) first_position: SqlStr,
    pub(crate) restage_pending: SqlStr,
    pub(crate) emit: SqlStr,
    pub(crate) published_delete: SqlStr,
    pub(crate) published_keep: SqlStr,
    pub(crate) fail_rows: SqlStr,
    pub(crate) fail_events: SqlStr,
    pub(crate) requeue_take: SqlStr,
    pub(crate) requeue_reinsert: SqlStr,
}

impl TailStatements {
    pub(crate) fn new(names: &TableNames, tailing: &Tailing) -> Self {
        let sql = |template: &str| -> SqlStr {
            // Safe: the only text spliced in is the validated, quoted
            // identifiers of `names` and the validated publication name;
            // every value is a bind parameter.
            let template =
                template.replace("{publication}", &format!("\"{}\"", tailing.publication));
            AssertSqlSafe(names.render(&template)).into_sql_str()
        };
        let create_publication = match tailing.mode {
            TailMode::Table => include_str!("../../sql/tailing/create_publication_table.sql"),
            TailMode::Messages => include_str!("../../sql/tailing/create_publication_messages.sql"),
        };
        Self {
            wal_level: sql(include_str!("../../sql/tailing/wal_level.sql")),
            publication_found: sql(include_str!("../../sql/tailing/publication_found.sql")),
            create_publication: sql(create_publication),
            create_slot: sql(include_str!("../../sql/tailing/create_slot.sql")),
            slot_state: sql(include_str!("../../sql/tailing/slot_state.sql")),
            position: sql(include_str!("../../sql/tailing/position.sql")),
            record_position: sql(include_str!("../../sql/tailing/record_position.sql")),
            reset_position: sql(include_str!("../../sql/tailing/reset_position.sql")),
            first_position: sql(include_str!("../../sql/tailing/first_position.sql")),
            restage_pending: sql(include_str!("../../sql/tailing/restage_pending.sql")),
            emit: sql(include_str!("../../sql/tailing/emit.sql")),
            published_delete: sql(include_str!("../../sql/tailing/published_delete.sql")),
            published_keep: sql(include_str!("../../sql/tailing/published_keep.sql")),
            fail_rows: sql(include_str!("../../sql/tailing/fail_rows.sql")),
            fail_events: sql(include_str!("../../sql/tailing/fail_events.sql")),
            requeue_take: sql(include_str!("../../sql/tailing/requeue_take.sql")),
            requeue_reinsert: sql(include_str!("../../sql/tailing/requeue_reinsert.sql")),
        }
    }
}

/// A replication slot as the server keeps it; positions are byte offsets
/// in the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotState {
    /// How far its reader confirmed it.
    pub confirmed: u64,
    /// The oldest position it retains the log from.
    pub restart: u64,
    /// The server's current position.
    pub current: u64,
    /// Whether a reader holds it.
    pub active: bool,
}

impl SlotState {
    /// The log written since the reader's confirmed position, in bytes.
    pub fn lag_bytes(&self) -> u64 {
        self.current.saturating_sub(self.confirmed)
    }

    /// The log the slot keeps the server from removing, in bytes.
    pub fn retained_bytes(&self) -> u64 {
        self.current.saturating_sub(self.restart)
    }
}

impl PgOutboxStore {
    /// The store's log tailing, or the error saying it has none.
    pub(crate) fn tailing(&self) -> Result<&(Tailing, TailStatements), StoreError> {
        self.inner().tailing.as_ref().ok_or_else(|| {
            StoreError::Misconfigured(
                "this store does not tail the log: set PgOutboxOptions::log_tailing".into(),
            )
        })
    }

    /// The store's log tailing: as its options set it, or else as the
    /// store that made the outbox's slot recorded it, so that a tool
    /// opening the outbox without the options (the CLI, the admin page)
    /// requeues as the relay reads. `None` where nobody tails the outbox.
    pub(crate) async fn tailing_in_use(
        &self,
    ) -> Result<Option<Cow<'_, (Tailing, TailStatements)>>, StoreError> {
        if let Some(configured) = &self.inner().tailing {
            return Ok(Some(Cow::Borrowed(configured)));
        }
        let names = &self.inner().names;
        let recorded: Vec<(String, String, String)> =
            sqlx::query_as(self.inner().sql.tailed_by.clone())
                .persistent(self.persistent())
                .fetch_all(self.pool())
                .await
                .map_err(store_error)?;
        let Some((slot, mode, publication)) = recorded.into_iter().next() else {
            return Ok(None);
        };
        let tailing = match mode.as_str() {
            "table" => LogTailing::table(),
            _ => LogTailing::messages(),
        };
        let tailing = Tailing::new(
            &tailing.slot(slot).publication(publication),
            &names.schema,
            &names.outbox,
        )?;
        let sql = TailStatements::new(names, &tailing);
        Ok(Some(Cow::Owned((tailing, sql))))
    }

    /// The store's log tailing, configured or recorded, or the error
    /// saying nobody tails the outbox.
    async fn tailing_found(&self) -> Result<Cow<'_, (Tailing, TailStatements)>, StoreError> {
        self.tailing_in_use().await?.ok_or_else(|| {
            StoreError::Misconfigured(
                "nobody tails this outbox's log: no slot is recorded for it and the store \
                 has no PgOutboxOptions::log_tailing"
                    .into(),
            )
        })
    }

    /// Whether staging writes logical decoding messages instead of rows.
    pub(crate) fn stages_messages(&self) -> bool {
        self.inner()
            .tailing
            .as_ref()
            .is_some_and(|(t, _)| t.mode == TailMode::Messages)
    }

    /// Creates the publication and the slot of the store's log tailing
    /// where they are missing, and records where a new slot starts.
    pub(crate) async fn prepare_tailing(&self) -> Result<(), StoreError> {
        let (tailing, sql) = self.tailing()?;
        let names = &self.inner().names;
        let pool = self.pool();
        let level: String = sqlx::query_scalar(sql.wal_level.clone())
            .persistent(self.persistent())
            .fetch_one(pool)
            .await
            .map_err(store_error)?;
        if level != "logical" {
            return Err(StoreError::Misconfigured(format!(
                "log tailing needs wal_level = logical, the server has {level}: set it in \
                 postgresql.conf (or the provider's parameter group) and restart the server"
            )));
        }
        let (found, publishes): (bool, bool) = sqlx::query_as(sql.publication_found.clone())
            .persistent(self.persistent())
            .bind(&tailing.publication)
            .bind(&names.schema)
            .bind(&names.outbox)
            .fetch_one(pool)
            .await
            .map_err(store_error)?;
        if !found {
            let created = sqlx::query(sql.create_publication.clone())
                .persistent(self.persistent())
                .execute(pool)
                .await;
            match created {
                Ok(_) => info!(publication = %tailing.publication, "publication created"),
                Err(e) if is_duplicate(&e) => {}
                Err(e) => return Err(store_error(e)),
            }
        } else if tailing.mode == TailMode::Table && !publishes {
            return Err(StoreError::Schema(format!(
                "the publication {} exists and does not publish the inserts of {}.{}; \
                 add the table to it or name another publication",
                tailing.publication, names.schema, names.outbox
            )));
        }
        if self.slot_state().await?.is_none() {
            let created = sqlx::query_scalar::<_, String>(sql.create_slot.clone())
                .persistent(self.persistent())
                .bind(&tailing.slot)
                .fetch_one(pool)
                .await;
            match created {
                Ok(lsn) => info!(slot = %tailing.slot, %lsn, "replication slot created"),
                Err(e) if is_duplicate(&e) => {}
                Err(e) => return Err(store_error(e)),
            }
        }
        if let Some(state) = self.slot_state().await? {
            self.record_first_position(state.confirmed).await?;
        }
        Ok(())
    }

    /// The store's slot as the server keeps it; `None` when it does not
    /// exist.
    ///
    /// # Errors
    ///
    /// [`StoreError::Misconfigured`] when the slot belongs to another
    /// database or another decoder than pgoutput, or nobody tails the
    /// outbox's log; errors of the connection as elsewhere.
    pub async fn slot_state(&self) -> Result<Option<SlotState>, StoreError> {
        let found = self.tailing_found().await?;
        let (tailing, sql) = &*found;
        let row = sqlx::query(sql.slot_state.clone())
            .persistent(self.persistent())
            .bind(&tailing.slot)
            .fetch_optional(self.pool())
            .await
            .map_err(store_error)?;
        let Some(row) = row else {
            return Ok(None);
        };
        let plugin: Option<String> = row.try_get("plugin").map_err(store_error)?;
        let database: Option<String> = row.try_get("database").map_err(store_error)?;
        let current_database: String = row.try_get("current_database").map_err(store_error)?;
        if plugin.as_deref() != Some("pgoutput") || database.as_deref() != Some(&current_database) {
            return Err(StoreError::Misconfigured(format!(
                "the replication slot {} is not a pgoutput slot of database {current_database} \
                 (plugin {plugin:?}, database {database:?}); name another slot",
                tailing.slot
            )));
        }
        let offset = |column: &str| -> Result<u64, StoreError> {
            let value: Option<i64> = row.try_get(column).map_err(store_error)?;
            Ok(value.unwrap_or(0).max(0) as u64)
        };
        Ok(Some(SlotState {
            confirmed: offset("confirmed")?,
            restart: offset("restart")?,
            current: offset("current")?,
            active: row.try_get("active").map_err(store_error)?,
        }))
    }

    /// Records the slot, its mode and publication, and where it stands,
    /// unless it is recorded already.
    pub(crate) async fn record_first_position(&self, lsn: u64) -> Result<(), StoreError> {
        let (tailing, sql) = self.tailing()?;
        let mode = match tailing.mode {
            TailMode::Table => "table",
            TailMode::Messages => "messages",
        };
        sqlx::query(sql.first_position.clone())
            .persistent(self.persistent())
            .bind(&tailing.slot)
            .bind(mode)
            .bind(&tailing.publication)
            .bind(i64::try_from(lsn).unwrap_or(i64::MAX))
            .execute(self.pool())
            .await
            .map_err(store_error)?;
        Ok(())
    }

    /// Where the slot's reader last recorded it stood.
    #[cfg_attr(not(feature = "wal"), allow(dead_code))]
    pub(crate) async fn recorded_position(&self) -> Result<Option<u64>, StoreError> {
        let (tailing, sql) = self.tailing()?;
        let lsn: Option<i64> = sqlx::query_scalar(sql.position.clone())
            .persistent(self.persistent())
            .bind(&tailing.slot)
            .fetch_optional(self.pool())
            .await
            .map_err(store_error)?;
        Ok(lsn.map(|lsn| lsn.max(0) as u64))
    }

    /// Records the slot's position; it only moves forward.
    #[cfg_attr(not(feature = "wal"), allow(dead_code))]
    pub(crate) async fn record_position(&self, lsn: u64) -> Result<(), StoreError> {
        let (tailing, sql) = self.tailing()?;
        sqlx::query(sql.record_position.clone())
            .persistent(self.persistent())
            .bind(&tailing.slot)
            .bind(i64::try_from(lsn).unwrap_or(i64::MAX))
            .execute(self.pool())
            .await
            .map_err(store_error)?;
        Ok(())
    }

    /// Accepts the slot where it stands as the relay's position, after
    /// an operator recovered from a slot that was lost, dropped and
    /// created again, or moved by hand: the relay refuses to start on
    /// such a slot until then. In table mode the events not yet published
    /// are still pending in the outbox table, and are staged again, in
    /// their order, for the new slot to read; some may be published
    /// twice, none is skipped. In message mode the events committed while
    /// no slot kept the log are gone from it. Returns the position
    /// accepted.
    ///
    /// # Errors
    ///
    /// [`StoreError::Misconfigured`] when the slot does not exist or nobody
    /// tails the outbox's log; errors of the connection as elsewhere.
    pub async fn accept_slot_position(&self) -> Result<u64, StoreError> {
        let found = self.tailing_found().await?;
        let (tailing, sql) = &*found;
        let lsn: Option<i64> = sqlx::query_scalar(sql.reset_position.clone())
            .persistent(self.persistent())
            .bind(&tailing.slot)
            .fetch_optional(self.pool())
            .await
            .map_err(store_error)?;
        let lsn = lsn.ok_or_else(|| {
            StoreError::Misconfigured(format!(
                "the replication slot {} does not exist: run migrate to create it",
                tailing.slot
            ))
        })?;
        if tailing.mode == TailMode::Table {
            let restaged: i64 = sqlx::query_scalar(sql.restage_pending.clone())
                .persistent(self.persistent())
                .fetch_one(self.pool())
                .await
                .map_err(store_error)?;
            info!(restaged, "pending rows staged again for the new slot");
        }
        info!(slot = %tailing.slot, lsn, "slot position accepted");
        Ok(lsn.max(0) as u64)
    }
}

/// Whether `error` says the object exists already: another process
/// created it first.
fn is_duplicate(error: &sqlx::Error) -> bool {
    let code = error.as_database_error().and_then(|e| e.code());
    matches!(code.as_deref(), Some("42710"))
}
