//! The in-memory store: outbox rows, inbox marks and business tables behind
//! one lock, so a unit of work commits atomically.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use bytes::Bytes;
use uuid::Uuid;

use super::MemoryStoreOptions;
use super::rows::{RouteRows, Status};
use crate::relay::Relays;
use crate::{Attempts, HybridClock, Retention, SharedClock, Wakeup};

/// The attempts counted for one consumer and event, and when last counted.
#[derive(Debug, Clone, Copy)]
pub(super) struct AttemptCount {
    pub(super) attempts: Attempts,
    pub(super) touched: SystemTime,
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
        Self::with_options(MemoryStoreOptions::default())
    }

    /// A store set up by `options`: its clock (a
    /// [`ManualClock`](crate::ManualClock) in tests) and what happens to
    /// published rows.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tidings_core::ManualClock;
    /// use tidings_core::memory::{MemoryStore, MemoryStoreOptions};
    ///
    /// let clock = ManualClock::starting_now();
    /// let store = MemoryStore::with_options(MemoryStoreOptions::new().clock(Arc::new(clock)));
    /// ```
    pub fn with_options(options: MemoryStoreOptions) -> Self {
        let clock = options.get_clock().clone();
        let inner = Inner {
            state: Mutex::new(State::default()),
            hlc: HybridClock::new(clock.clone()),
            clock,
            retention: options.get_retention(),
            wakeup: Wakeup::new(),
        };
        Self {
            inner: Arc::new(inner),
        }
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
