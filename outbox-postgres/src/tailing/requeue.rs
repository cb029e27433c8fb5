//! Requeuing failed events of a log-tailing store: the relay reads only
//! what is staged, so a failed event is staged again rather than set back
//! to pending.

use sqlx::{Acquire, Row, SqlStr};
use tidings_core::{StagedEvent, StoreError};
use tracing::info;
use uuid::Uuid;

use super::statements::TailStatements;
use super::{TailMode, Tailing, encode};
use crate::PgOutboxStore;
use crate::claim::row::RowDecoder;
use crate::error::store_error;

impl PgOutboxStore {
    /// Stages the failed events of `route` again (all of them with `all`,
    /// else those among `ids`), in their order, and removes their failed
    /// rows, in one transaction; returns how many.
    pub(crate) async fn requeue_tailed(
        &self,
        route: &str,
        all: bool,
        ids: &[Uuid],
        tailing: &Tailing,
        sql: &TailStatements,
    ) -> Result<u64, StoreError> {
        let mut conn = self.pool().acquire().await.map_err(store_error)?;
        let mut tx = conn.begin().await.map_err(store_error)?;
        // Both statements take the failed rows named the same way.
        let failed_rows = |statement: &SqlStr| {
            let query = sqlx::query(statement.clone()).persistent(self.persistent());
            query.bind(route).bind(all).bind(ids)
        };
        let requeued = match tailing.mode {
            TailMode::Table => {
                let row = failed_rows(&sql.requeue_reinsert)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(store_error)?;
                row.try_get::<i64, _>(0).map_err(store_error)?
            }
            TailMode::Messages => {
                let rows = failed_rows(&sql.requeue_take)
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(store_error)?;
                let mut decoder = RowDecoder::new(rows.len());
                rows.iter().for_each(|row| decoder.push(row));
                let (mut taken, unreadable) = decoder.finish()?;
                if let Some((event_id, reason)) = unreadable.first() {
                    // Rolled back: the failed rows stay for repair.
                    return Err(StoreError::Corrupt { event_id, reason });
                }
                taken.sort_by_key(|row| row.id);
                let mut contents = Vec::with_capacity(taken.len());
                for row in taken {
                    let mut envelope = row.record.envelope;
                    envelope.attempts = 0;
                    let event = StagedEvent {
                        envelope,
                        delay: None,
                    };
                    contents.push(encode(&event).map_err(|e| StoreError::Invalid(e.to_string()))?);
                }
                sqlx::query_scalar::<_, i64>(sql.emit.clone())
                    .persistent(self.persistent())
                    .bind(&tailing.prefix)
                    .bind(&contents)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(store_error)?
            }
        };
        tx.commit().await.map_err(store_error)?;
        let requeued = u64::try_from(requeued).unwrap_or(0);
        info!(requeued, "failed events staged again");
        Ok(requeued)
    }
}
