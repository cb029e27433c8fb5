//! Crash loops: events that keep killing the relay that publishes them.
//!
//! A relay that dies leaves no mark on the events it was publishing: the
//! slot hands them to its successor as if they were new. So each session
//! counts itself in `<table>_positions` as it begins. A session that
//! begins where an earlier one began, the position not moved in between,
//! is careful: it lists each claim's events in that row before handing
//! them out, and takes them off once they are settled. The next session
//! charges a crash to every event still listed, and its claims report
//! those crashes as claims that never finished, so the relay fails an
//! event that reached its
//! [`max_crashes`](tidings_core::relay::RelayOptions::max_crashes) as a
//! crash loop, as it does a polled row. A position that moves clears the
//! counts.
//!
//! Only careful sessions write per claim, and a session is careful only
//! after one ended without moving the position: a relay at work writes
//! nothing more.

use std::collections::HashMap;

use sqlx::{Row, SqlStr};
use tidings_core::{OutboxRecord, StoreError};
use uuid::Uuid;

use crate::PgOutboxStore;
use crate::error::store_error;
use crate::tailing::statements::TailStatements;

/// What a session knows of the sessions that ended before it at the same
/// position.
#[derive(Debug, Default)]
pub(super) struct Crashes {
    careful: bool,
    by_event: HashMap<Uuid, u32>,
}

impl Crashes {
    /// Counts a session beginning on `store`'s slot, and charges a crash
    /// to each event the last one left in flight.
    pub(super) async fn session_started(store: &PgOutboxStore) -> Result<Self, StoreError> {
        let (tailing, sql) = store.tailing()?;
        let query = sqlx::query(sql.session_started.clone()).bind(&tailing.slot);
        let Some(row) = store.first_row(query).await? else {
            return Ok(Self::default());
        };
        let starts: i32 = row.try_get(0).map_err(store_error)?;
        let crashes: String = row.try_get(1).map_err(store_error)?;
        let by_event = serde_json::from_str(&crashes).map_err(|e| {
            StoreError::Backend(format!("the crashes recorded for the slot: {e}").into())
        })?;
        Ok(Self {
            careful: starts > 1,
            by_event,
        })
    }

    /// Whether this session lists the events it hands out.
    pub(super) fn is_careful(&self) -> bool {
        self.careful
    }

    /// Adds the crashes charged to each record's event to its unfinished
    /// claims.
    pub(super) fn charge<'r>(&self, records: impl Iterator<Item = &'r mut OutboxRecord>) {
        if self.by_event.is_empty() {
            return;
        }
        for record in records {
            if let Some(&crashes) = self.by_event.get(&record.envelope.event_id) {
                record.attempts_started = record.attempts_started.saturating_add(crashes);
            }
        }
    }
}

/// Lists events about to be handed out.
pub(super) async fn handing_out(store: &PgOutboxStore, ids: Vec<Uuid>) -> Result<(), StoreError> {
    update_list(store, |sql| &sql.in_flight_add, ids).await
}

/// Takes settled events off the list.
pub(super) async fn settled(store: &PgOutboxStore, ids: Vec<Uuid>) -> Result<(), StoreError> {
    update_list(store, |sql| &sql.in_flight_remove, ids).await
}

/// Runs `statement` on the slot's list of events in flight with `ids`.
async fn update_list(
    store: &PgOutboxStore,
    statement: fn(&TailStatements) -> &SqlStr,
    ids: Vec<Uuid>,
) -> Result<(), StoreError> {
    let (tailing, sql) = store.tailing()?;
    let query = sqlx::query(statement(sql).clone())
        .bind(&tailing.slot)
        .bind(ids);
    store.execute_alone(query).await.map(drop)
}
