//! A log-tailing store's slot and the position its reader recorded, and
//! which log tailing a store uses: set in its options, or recorded in the
//! outbox by the store that made the slot.

use std::borrow::Cow;

use sqlx::Row;
use sqlx::postgres::PgRow;
use tidings_core::StoreError;
use tracing::info;

use super::statements::TailStatements;
use super::{LogTailing, TailMode, Tailing};
use crate::PgOutboxStore;
use crate::error::store_error;
use crate::pooling::PgQuery;

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
        let recorded = self.first_row(sqlx::query(self.inner().sql.tailed_by.clone()));
        let Some(row) = recorded.await? else {
            return Ok(None);
        };
        let text = |at: usize| row.try_get::<String, _>(at).map_err(store_error);
        let (slot, mode, publication) = (text(0)?, text(1)?, text(2)?);
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
        let row = self.first_row(sqlx::query(sql.slot_state.clone()).bind(&tailing.slot));
        let Some(row) = row.await? else {
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
        let record = sqlx::query(sql.first_position.clone())
            .bind(&tailing.slot)
            .bind(mode)
            .bind(&tailing.publication)
            .bind(offset(lsn));
        self.execute_alone(record).await.map(drop)
    }

    /// Where the slot's reader last recorded it stood.
    #[cfg_attr(not(feature = "wal"), allow(dead_code))]
    pub(crate) async fn recorded_position(&self) -> Result<Option<u64>, StoreError> {
        let (tailing, sql) = self.tailing()?;
        let row = self.first_row(sqlx::query(sql.position.clone()).bind(&tailing.slot));
        row.await?.map(|row| lsn(&row)).transpose()
    }

    /// Records the slot's position; it only moves forward.
    #[cfg_attr(not(feature = "wal"), allow(dead_code))]
    pub(crate) async fn record_position(&self, lsn: u64) -> Result<(), StoreError> {
        let (tailing, sql) = self.tailing()?;
        let record = sqlx::query(sql.record_position.clone())
            .bind(&tailing.slot)
            .bind(offset(lsn));
        self.execute_alone(record).await.map(drop)
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
        let row = self.first_row(sqlx::query(sql.reset_position.clone()).bind(&tailing.slot));
        let row = row.await?.ok_or_else(|| {
            StoreError::Misconfigured(format!(
                "the replication slot {} does not exist: run migrate to create it",
                tailing.slot
            ))
        })?;
        let at = lsn(&row)?;
        if tailing.mode == TailMode::Table {
            let restaged = self.first_row(sqlx::query(sql.restage_pending.clone()));
            let restaged: i64 = match restaged.await? {
                Some(row) => row.try_get(0).map_err(store_error)?,
                None => 0,
            };
            info!(restaged, "pending rows staged again for the new slot");
        }
        info!(slot = %tailing.slot, at, "slot position accepted");
        Ok(at)
    }

    /// The first row `query` returns, run on a session of its own.
    pub(crate) async fn first_row(&self, query: PgQuery<'_>) -> Result<Option<PgRow>, StoreError> {
        Ok(self.fetch_alone(query).await?.into_iter().next())
    }
}

/// A position as the positions table stores it.
fn offset(lsn: u64) -> i64 {
    i64::try_from(lsn).unwrap_or(i64::MAX)
}

/// The position in a row's first column.
fn lsn(row: &PgRow) -> Result<u64, StoreError> {
    let lsn: i64 = row.try_get(0).map_err(store_error)?;
    Ok(lsn.max(0) as u64)
}
