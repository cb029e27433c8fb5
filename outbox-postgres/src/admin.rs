//! The operator's side: routes, failed rows, purge counts and the inbox
//! per consumer.

use std::time::Duration;

use bytes::Bytes;
use sqlx::Row;
use sqlx::postgres::PgRow;
use tidings_core::{
    ConsumerStats, FailedFilter, FailedRow, OutboxAdmin, PurgeRequest, PurgeStatus, StoreError,
};
use tracing::instrument;
use uuid::Uuid;

use crate::PgOutboxStore;
use crate::error::store_error;
use crate::params::{limit, micros};

impl OutboxAdmin for PgOutboxStore {
    #[instrument(skip_all, fields(db.system = "postgresql"), err)]
    async fn routes(&self) -> Result<Vec<String>, StoreError> {
        let rows = self
            .fetch_alone(sqlx::query(self.inner().sql.routes.clone()))
            .await?;
        rows.iter()
            .map(|row| row.try_get(0).map_err(store_error))
            .collect()
    }

    #[instrument(skip_all, fields(db.system = "postgresql", outbox.route = route), err)]
    async fn failed(
        &self,
        route: &str,
        filter: &FailedFilter,
    ) -> Result<Vec<FailedRow>, StoreError> {
        let rows = self
            .fetch_alone(
                sqlx::query(self.inner().sql.failed_rows.clone())
                    .bind(route)
                    .bind(filter.event_type.as_deref())
                    .bind(micros(filter.older_than.unwrap_or_default()))
                    .bind(filter.ids.as_deref())
                    .bind(limit(filter.limit)),
            )
            .await?;
        rows.iter().map(failed_row).collect()
    }

    #[instrument(skip_all, fields(db.system = "postgresql", outbox.route = route), err)]
    async fn count_purgeable(&self, route: &str, request: PurgeRequest) -> Result<u64, StoreError> {
        let status = match request.status {
            PurgeStatus::Published => "published",
            PurgeStatus::Failed => "failed",
        };
        let query = sqlx::query_scalar(self.inner().sql.purge_count.clone())
            .persistent(self.persistent())
            .bind(route)
            .bind(status)
            .bind(micros(request.older_than));
        let count: i64 = self.alone(async |conn| query.fetch_one(conn).await).await?;
        Ok(u64::try_from(count).unwrap_or_default())
    }

    #[instrument(skip_all, fields(db.system = "postgresql"), err)]
    async fn consumers(&self) -> Result<Vec<ConsumerStats>, StoreError> {
        let rows = self
            .fetch_alone(sqlx::query(self.inner().sql.inbox_consumers.clone()))
            .await?;
        rows.iter()
            .map(|row| {
                let marks: i64 = row.try_get("marks").map_err(store_error)?;
                let oldest: Option<i64> = row.try_get("oldest_us").map_err(store_error)?;
                Ok(ConsumerStats {
                    consumer: row.try_get("consumer").map_err(store_error)?,
                    marks: u64::try_from(marks).unwrap_or_default(),
                    oldest_mark_age: oldest.map(age),
                })
            })
            .collect()
    }

    #[instrument(skip_all, fields(db.system = "postgresql", messaging.consumer.group.name = consumer), err)]
    async fn mark_age(
        &self,
        consumer: &str,
        event_id: Uuid,
    ) -> Result<Option<Duration>, StoreError> {
        let query = sqlx::query_scalar(self.inner().sql.mark_age.clone())
            .persistent(self.persistent())
            .bind(consumer)
            .bind(event_id);
        let age_us: Option<i64> = self
            .alone(async |conn| query.fetch_optional(conn).await)
            .await?;
        Ok(age_us.map(age))
    }
}

/// Reads a row of `failed_rows.sql`.
fn failed_row(row: &PgRow) -> Result<FailedRow, StoreError> {
    let attempts: i32 = row.try_get("attempts_started").map_err(store_error)?;
    let failed_us: Option<i64> = row.try_get("failed_us").map_err(store_error)?;
    let payload: Vec<u8> = row.try_get("payload").map_err(store_error)?;
    let event_id: Uuid = row.try_get("event_id").map_err(store_error)?;
    Ok(FailedRow {
        event_id,
        event_type: row.try_get("event_type").map_err(store_error)?,
        destination: row.try_get("destination").map_err(store_error)?,
        ordering_key: row.try_get("ordering_key").map_err(store_error)?,
        attempts: u32::try_from(attempts).unwrap_or_default(),
        last_error: row.try_get("last_error").map_err(store_error)?,
        failed_for: failed_us.map(age).unwrap_or_default(),
        content_type: row.try_get("content_type").map_err(store_error)?,
        payload: Bytes::from(payload),
    })
}

fn age(micros: i64) -> Duration {
    Duration::from_micros(u64::try_from(micros).unwrap_or_default())
}
