//! The relay's side: claims, sweeps, requeues, purges and stats.

use std::time::Duration;

use sqlx::Row;
use tidings_core::{
    ClaimRequest, CommitFailure, OutboxStats, OutboxStore, PurgeRequest, PurgeStatus, Requeue,
    StageEvents, StagedEvent, StoreError,
};
use tracing::{debug, info, instrument};
use uuid::Uuid;

use crate::claim::records;
use crate::error::store_error;
use crate::params::{limit, micros};
use crate::{PgBatch, PgOutboxStore};

impl StageEvents for PgOutboxStore {
    async fn stage_events(&self, events: Vec<StagedEvent>) -> Result<(), StoreError> {
        let mut ctx = self.begin().await?;
        ctx.outbox().extend(events);
        ctx.commit().await.map_err(CommitFailure::into_store_error)
    }
}

impl OutboxStore for PgOutboxStore {
    type Batch = PgBatch;

    async fn claim(&self, request: ClaimRequest<'_>) -> Result<PgBatch, StoreError> {
        if self.inner().tailing.is_some() {
            // Its relay reads the log; claims here would publish twice.
            return Err(StoreError::Misconfigured(
                "this outbox is relayed by log tailing: relay it through a WalStore, \
                 not by claims"
                    .to_owned(),
            ));
        }
        self.rotate_when_due();
        PgBatch::claim(self, request).await
    }

    #[instrument(skip_all, fields(db.system = "postgresql", outbox.route = route), err)]
    async fn sweep_expired(&self, route: &str, limit_rows: usize) -> Result<u64, StoreError> {
        let inner = self.inner();
        let swept = self
            .execute_alone(
                sqlx::query(inner.sql.sweep.clone())
                    .bind(route)
                    .bind(limit(limit_rows)),
            )
            .await?;
        if swept > 0 {
            debug!(swept, "expired leases returned to pending");
        }
        // Locked claims that died unsettled, from whichever store claimed.
        let counted = records::count_crashes(self, route, limit_rows).await?;
        Ok(swept + counted)
    }

    #[instrument(skip_all, fields(db.system = "postgresql", outbox.route = route), err)]
    async fn requeue_failed(&self, route: &str, which: Requeue) -> Result<u64, StoreError> {
        let (all, ids) = match which {
            Requeue::All => (true, Vec::new()),
            Requeue::Ids(ids) => (false, ids),
        };
        if let Some(found) = self.tailing_in_use().await? {
            let (tailing, sql) = &*found;
            return self.requeue_tailed(route, all, &ids, tailing, sql).await;
        }
        let inner = self.inner();
        let requeued = self
            .execute_alone(
                sqlx::query(inner.sql.requeue.clone())
                    .bind(route)
                    .bind(all)
                    .bind::<&[Uuid]>(&ids),
            )
            .await?;
        info!(requeued, "failed rows requeued");
        Ok(requeued)
    }

    #[instrument(skip_all, fields(db.system = "postgresql", outbox.route = route), err)]
    async fn purge(&self, route: &str, request: PurgeRequest) -> Result<u64, StoreError> {
        let status = match request.status {
            PurgeStatus::Published => "published",
            PurgeStatus::Failed => "failed",
        };
        let inner = self.inner();
        let purged = self
            .execute_alone(
                sqlx::query(inner.sql.purge.clone())
                    .bind(route)
                    .bind(status)
                    .bind(micros(request.older_than))
                    .bind(limit(request.limit)),
            )
            .await?;
        debug!(purged, status, "finished rows purged");
        Ok(purged)
    }

    #[instrument(skip_all, fields(db.system = "postgresql", outbox.route = route), err)]
    async fn delete_failed(&self, route: &str, ids: &[Uuid]) -> Result<u64, StoreError> {
        if ids.is_empty() {
            return Ok(0);
        }
        let inner = self.inner();
        let deleted = self
            .execute_alone(
                sqlx::query(inner.sql.delete_failed.clone())
                    .bind(route)
                    .bind(ids),
            )
            .await?;
        info!(deleted, "failed rows deleted");
        Ok(deleted)
    }

    #[instrument(skip_all, fields(db.system = "postgresql", outbox.route = route), err)]
    async fn stats(&self, route: &str) -> Result<OutboxStats, StoreError> {
        let inner = self.inner();
        let query = sqlx::query(inner.sql.stats.clone())
            .persistent(self.persistent())
            .bind(route);
        let row = self.alone(async |conn| query.fetch_one(conn).await).await?;
        let count = |column: &str| -> Result<u64, StoreError> {
            let n: i64 = row.try_get(column).map_err(store_error)?;
            Ok(u64::try_from(n).unwrap_or(0))
        };
        let oldest: Option<i64> = row.try_get("oldest_pending_us").map_err(store_error)?;
        Ok(OutboxStats {
            pending: count("pending")?,
            in_flight: count("in_flight")?,
            failed: count("failed")?,
            published: count("published")?,
            oldest_pending_age: oldest.map(|us| Duration::from_micros(us.max(0) as u64)),
        })
    }
}
