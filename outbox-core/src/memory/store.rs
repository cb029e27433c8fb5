//! The in-memory store: outbox rows, inbox marks and business tables behind
//! one lock, so a unit of work commits atomically.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use uuid::Uuid;

use super::batch::MemoryBatch;
use super::claim;
use super::context::MemoryContext;
use super::inbox::AttemptCount;
use super::rows::{RouteRows, Status};
use crate::relay::Relays;
use crate::{
    ClaimCursor, ClaimRequest, HybridClock, LeaseToken, OutboxStats, OutboxStore, PurgeRequest,
    PurgeStatus, Requeue, SharedClock, StoreError, SystemClock, Wakeup,
};

/// What happens to a row once it is published.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Retention {
    /// Delete it at once (the default).
    #[default]
    Delete,
    /// Keep it, marked published, until [`OutboxStore::purge`] removes it.
    Keep,
}

#[derive(Debug, Default)]
pub(super) struct State {
    pub(super) routes: HashMap<String, RouteRows>,
    pub(super) next_seq: u64,
    pub(super) inbox: HashMap<(String, Uuid), SystemTime>,
    pub(super) attempts: HashMap<(String, Uuid), AttemptCount>,
    pub(super) tables: HashMap<String, BTreeMap<String, Bytes>>,
}

#[derive(Debug)]
pub(super) struct Inner {
    pub(super) state: Mutex<State>,
    pub(super) clock: SharedClock,
    pub(super) hlc: HybridClock,
    pub(super) retention: Retention,
    pub(super) wakeup: Wakeup,
}

/// An outbox and inbox store in memory. Clones share one store.
#[derive(Debug, Clone)]
pub struct MemoryStore {
    pub(super) inner: Arc<Inner>,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryStore {
    /// A store on the system clock that deletes published rows.
    pub fn new() -> Self {
        Self::with_clock(SystemClock::shared())
    }

    /// A store reading time from `clock` (a [`ManualClock`](crate::ManualClock)
    /// in tests).
    pub fn with_clock(clock: SharedClock) -> Self {
        Self::build(clock, Retention::Delete)
    }

    /// Sets what happens to published rows.
    pub fn retention(self, retention: Retention) -> Self {
        Self::build(self.inner.clock.clone(), retention)
    }

    fn build(clock: SharedClock, retention: Retention) -> Self {
        let inner = Inner {
            state: Mutex::new(State::default()),
            hlc: HybridClock::new(clock.clone()),
            clock,
            retention,
            wakeup: Wakeup::new(),
        };
        Self {
            inner: Arc::new(inner),
        }
    }

    /// Opens a unit of work: staged events, inbox marks and table writes
    /// become visible together on [`MemoryContext::commit`], or not at all.
    pub fn begin(&self) -> MemoryContext {
        MemoryContext::new(self.clone())
    }

    /// The steps that relay this store's routes to `publisher`, woken by
    /// its commits: add routes with [`Relays::route`], then the whole to a
    /// plan with [`LifecyclePlan::steps`](crate::lifecycle::LifecyclePlan::steps).
    pub fn relays<P: crate::Publisher + Clone>(&self, publisher: P) -> Relays<Self, P> {
        Relays::new(self.clone(), publisher).wakeup(self.wakeup(), None)
    }

    /// The signal woken by every commit that staged events; give it to the
    /// relay.
    pub fn wakeup(&self) -> Wakeup {
        self.inner.wakeup.clone()
    }

    /// The hybrid logical clock stamping this store's events.
    pub fn hlc(&self) -> &HybridClock {
        &self.inner.hlc
    }

    /// A committed table row.
    pub fn get(&self, table: &str, key: &str) -> Option<Bytes> {
        self.lock().tables.get(table)?.get(key).cloned()
    }

    /// Every committed row of a table, ordered by key.
    pub fn table(&self, table: &str) -> Vec<(String, Bytes)> {
        self.lock()
            .tables
            .get(table)
            .map(|t| t.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default()
    }

    /// Rows of a route waiting to be claimed.
    pub fn pending_count(&self, route: &str) -> u64 {
        self.lock()
            .routes
            .get(route)
            .map_or(0, |rows| rows.count(|r| r.status == Status::Pending))
    }

    /// Every event id of a route still stored, in staging order.
    pub fn event_ids(&self, route: &str) -> Vec<Uuid> {
        self.lock()
            .routes
            .get(route)
            .map(|rows| rows.rows.values().map(|r| r.envelope.event_id).collect())
            .unwrap_or_default()
    }

    pub(super) fn now(&self) -> SystemTime {
        self.inner.clock.now()
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.inner.state.lock().unwrap_or_else(|p| p.into_inner())
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
