//! The relay's side: claims, sweeps, requeues, purges and stats.

use mongodb::bson::{Bson, Document};
use tidings_core::{
    ClaimRequest, CommitFailure, LeaseToken, OutboxStats, OutboxStore, PurgeRequest, PurgeStatus,
    Requeue, StageEvents, StagedEvent, StoreError,
};
use tracing::{debug, info, instrument};

use crate::claim::claim;
use crate::document::record;
use crate::error::{is_type_mismatch, store_error};
use crate::filters;
use crate::read::{read_all, read_ids};
use crate::schema::{age, count, int64, micros, status};
use crate::unreadable;
use crate::{MongoBatch, MongoOutboxStore};

impl StageEvents for MongoOutboxStore {
    async fn stage_events(&self, events: Vec<StagedEvent>) -> Result<(), StoreError> {
        let mut ctx = self.begin().await?;
        ctx.outbox().extend(events);
        ctx.commit().await.map_err(CommitFailure::into_store_error)
    }
}

impl OutboxStore for MongoOutboxStore {
    type Batch = MongoBatch;

    async fn claim(&self, request: ClaimRequest<'_>) -> Result<MongoBatch, StoreError> {
        let lease = LeaseToken::new();
        // The stamp's expiry counts from a later reading of the clock.
        let lease_until = self.now() + request.lease;
        let documents = match claim(self, &request, lease).await {
            Ok(documents) => documents,
            Err(e) if is_type_mismatch(&e) => {
                return Err(
                    unreadable::set_aside_unstampable(self, &request.route.name, lease, e).await,
                );
            }
            Err(e) => return Err(store_error(e)),
        };
        let mut records = Vec::with_capacity(documents.len());
        let mut unreadable = Vec::new();
        for document in &documents {
            match record(document) {
                Ok(record) => records.push(record),
                Err(e) => unreadable.push((document, e)),
            }
        }
        if !unreadable.is_empty() {
            return Err(unreadable::set_aside(self, lease, unreadable).await);
        }
        Ok(MongoBatch::new(
            self.clone(),
            request.route.name.to_string(),
            (lease, lease_until),
            records,
        ))
    }

    #[instrument(skip_all, fields(db.system = "mongodb", outbox.route = route), err)]
    async fn sweep_expired(&self, route: &str, limit: usize) -> Result<u64, StoreError> {
        let now = micros(self.now());
        let ids = self.ids_where(filters::expired(route, now), limit).await?;
        if ids.is_empty() {
            return Ok(0);
        }
        let swept = self
            .outbox()
            .update_many(filters::still_expired(ids, now), filters::sweep(now))
            .await
            .map_err(store_error)?
            .modified_count;
        if swept > 0 {
            info!(swept, "expired leases returned to pending");
        }
        Ok(swept)
    }

    #[instrument(skip_all, fields(db.system = "mongodb", outbox.route = route), err)]
    async fn requeue_failed(&self, route: &str, which: Requeue) -> Result<u64, StoreError> {
        let filter = match &which {
            Requeue::All => filters::failed(route, None),
            Requeue::Ids(ids) => filters::failed(route, Some(ids)),
        };
        let requeued = self
            .outbox()
            .update_many(filter, filters::requeue(micros(self.now())))
            .await
            .map_err(store_error)?
            .modified_count;
        info!(requeued, "failed rows requeued");
        Ok(requeued)
    }

    #[instrument(skip_all, fields(db.system = "mongodb", outbox.route = route), err)]
    async fn delete_failed(&self, route: &str, ids: &[uuid::Uuid]) -> Result<u64, StoreError> {
        if ids.is_empty() {
            return Ok(0);
        }
        let deleted = self
            .outbox()
            .delete_many(filters::failed(route, Some(ids)))
            .await
            .map_err(store_error)?
            .deleted_count;
        info!(deleted, "failed rows deleted");
        Ok(deleted)
    }

    #[instrument(skip_all, fields(db.system = "mongodb", outbox.route = route), err)]
    async fn purge(&self, route: &str, request: PurgeRequest) -> Result<u64, StoreError> {
        let Some(filter) = self.purgeable(route, request) else {
            return Ok(0);
        };
        let ids = self.ids_where(filter.clone(), request.limit).await?;
        if ids.is_empty() {
            return Ok(0);
        }
        let mut doomed = filters::ids_in(ids);
        doomed.extend(filter);
        let purged = self
            .outbox()
            .delete_many(doomed)
            .await
            .map_err(store_error)?
            .deleted_count;
        debug!(purged, status = ?request.status, "finished rows purged");
        Ok(purged)
    }

    #[instrument(skip_all, fields(db.system = "mongodb", outbox.route = route), err)]
    async fn stats(&self, route: &str) -> Result<OutboxStats, StoreError> {
        let groups: Vec<Document> =
            read_all(self.outbox().aggregate(filters::stats_pipeline(route)))
                .await
                .map_err(store_error)?;
        let now = micros(self.now());
        let mut stats = OutboxStats::default();
        for group in groups {
            let count = count(group.get("count"));
            match group.get_str("_id").unwrap_or_default() {
                status::PENDING => {
                    stats.pending = count;
                    stats.oldest_pending_age = group.get_i64("oldest").ok().map(|at| age(now, at));
                }
                status::IN_FLIGHT => stats.in_flight = count,
                status::FAILED => stats.failed = count,
                status::PUBLISHED => stats.published = count,
                _ => {}
            }
        }
        Ok(stats)
    }
}

impl MongoOutboxStore {
    /// The finished documents of `route` a purge by `request` takes; `None`
    /// when its age reaches back before the clock's epoch, so none can be.
    pub(crate) fn purgeable(&self, route: &str, request: PurgeRequest) -> Option<Document> {
        let status = match request.status {
            PurgeStatus::Published => status::PUBLISHED,
            PurgeStatus::Failed => status::FAILED,
        };
        let cutoff = self.now().checked_sub(request.older_than)?;
        Some(filters::finished_before(route, status, micros(cutoff)))
    }

    /// The `_id`s of up to `limit` documents matching `filter`, in creation
    /// order.
    async fn ids_where(&self, filter: Document, limit: usize) -> Result<Vec<Bson>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let find = self
            .outbox()
            .find(filter)
            .sort(filters::claim_order(false))
            .limit(int64(limit));
        read_ids(find).await.map_err(store_error)
    }
}
