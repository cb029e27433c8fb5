//! The in-memory store's relay side: claims, sweeps, requeues, purges and
//! counts.

use std::collections::HashSet;
use std::time::Duration;

use uuid::Uuid;

use super::batch::MemoryBatch;
use super::claim;
use super::rows::Status;
use super::store::MemoryStore;
use crate::{
    ClaimCursor, ClaimRequest, CommitFailure, LeaseToken, OutboxStats, OutboxStore, PurgeRequest,
    PurgeStatus, Requeue, StageEvents, StagedEvent, StoreError,
};

impl StageEvents for MemoryStore {
    async fn stage_events(&self, events: Vec<StagedEvent>) -> Result<(), StoreError> {
        let mut ctx = self.begin();
        ctx.outbox().extend(events);
        ctx.commit().map_err(CommitFailure::into_store_error)
    }
}

impl OutboxStore for MemoryStore {
    type Batch = MemoryBatch;

    async fn claim(&self, request: ClaimRequest<'_>) -> Result<MemoryBatch, StoreError> {
        let now = self.now();
        let lease = LeaseToken::new();
        let expires_at = now + request.lease;
        let mut state = self.lock();
        let Some(rows) = state.routes.get_mut(request.route.name.as_ref()) else {
            return Ok(MemoryBatch::new(
                self.clone(),
                &request.route.name,
                lease,
                Vec::new(),
            ));
        };
        let cursors = ClaimCursor::fits(request.route);
        let after = request.after.filter(|_| cursors);
        let after = after.and_then(|cursor| u64::try_from(cursor.0).ok());
        let chosen = claim::select(rows, request.route, request.limit, now, after);
        let cursor = chosen.last().filter(|_| cursors);
        let cursor = cursor.and_then(|seq| i64::try_from(*seq).ok().map(ClaimCursor));
        let mut records = Vec::with_capacity(chosen.len());
        for seq in chosen {
            if let Some(row) = rows.rows.get_mut(&seq) {
                row.status = Status::InFlight { lease, expires_at };
                row.started += 1;
                records.push(row.record());
            }
        }
        let batch = MemoryBatch::new(self.clone(), &request.route.name, lease, records);
        Ok(batch.going_on_past(cursor))
    }

    async fn sweep_expired(&self, route: &str, limit: usize) -> Result<u64, StoreError> {
        let now = self.now();
        let mut state = self.lock();
        let Some(rows) = state.routes.get_mut(route) else {
            return Ok(0);
        };
        let expired = rows
            .rows
            .values_mut()
            .filter(
                |r| matches!(r.status, Status::InFlight { expires_at, .. } if expires_at <= now),
            )
            .take(limit);
        let mut swept = 0;
        for row in expired {
            row.status = Status::Pending;
            row.available_at = now;
            swept += 1;
        }
        Ok(swept)
    }

    async fn requeue_failed(&self, route: &str, which: Requeue) -> Result<u64, StoreError> {
        let now = self.now();
        let mut state = self.lock();
        let Some(rows) = state.routes.get_mut(route) else {
            return Ok(0);
        };
        let wanted: Option<HashSet<Uuid>> = match which {
            Requeue::Ids(ids) => Some(ids.into_iter().collect()),
            Requeue::All => None,
        };
        let mut requeued = 0;
        for row in rows.rows.values_mut() {
            let chosen = wanted
                .as_ref()
                .is_none_or(|w| w.contains(&row.envelope.event_id));
            if row.status == Status::Failed && chosen {
                row.status = Status::Pending;
                row.available_at = now;
                row.started = 0;
                row.finished = 0;
                row.finished_at = None;
                requeued += 1;
            }
        }
        Ok(requeued)
    }

    async fn delete_failed(&self, route: &str, ids: &[Uuid]) -> Result<u64, StoreError> {
        let mut state = self.lock();
        let Some(rows) = state.routes.get_mut(route) else {
            return Ok(0);
        };
        let wanted: HashSet<Uuid> = ids.iter().copied().collect();
        let doomed: Vec<Uuid> = rows
            .rows
            .values()
            .filter(|r| r.status == Status::Failed && wanted.contains(&r.envelope.event_id))
            .map(|r| r.envelope.event_id)
            .collect();
        for id in &doomed {
            rows.remove(*id);
        }
        Ok(doomed.len() as u64)
    }

    async fn purge(&self, route: &str, request: PurgeRequest) -> Result<u64, StoreError> {
        let cutoff = self.now().checked_sub(request.older_than);
        let status = match request.status {
            PurgeStatus::Published => Status::Published,
            PurgeStatus::Failed => Status::Failed,
        };
        let mut state = self.lock();
        let Some(rows) = state.routes.get_mut(route) else {
            return Ok(0);
        };
        let doomed: Vec<Uuid> = rows
            .rows
            .values()
            .filter(|r| r.status == status)
            .filter(|r| matches!((r.finished_at, cutoff), (Some(at), Some(cut)) if at <= cut))
            .take(request.limit)
            .map(|r| r.envelope.event_id)
            .collect();
        for id in &doomed {
            rows.remove(*id);
        }
        Ok(doomed.len() as u64)
    }

    async fn stats(&self, route: &str) -> Result<OutboxStats, StoreError> {
        let now = self.now();
        let state = self.lock();
        let Some(rows) = state.routes.get(route) else {
            return Ok(OutboxStats::default());
        };
        let oldest = rows
            .rows
            .values()
            .filter(|r| r.status == Status::Pending)
            .map(|r| r.envelope.occurred_at)
            .min();
        Ok(OutboxStats {
            pending: rows.count(|r| r.status == Status::Pending),
            in_flight: rows.count(|r| matches!(r.status, Status::InFlight { .. })),
            failed: rows.count(|r| r.status == Status::Failed),
            published: rows.count(|r| r.status == Status::Published),
            oldest_pending_age: oldest.map(|t| now.duration_since(t).unwrap_or(Duration::ZERO)),
        })
    }
}
