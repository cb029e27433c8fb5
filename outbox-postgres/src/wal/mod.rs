//! The log-tailing relay's store: reads a store's events from its logical
//! replication slot and hands them to an ordinary
//! [`Relay`](tidings_core::relay::Relay), which publishes them through the
//! same engine, publishers and metrics as a polling relay.
//!
//! A task of the store's own reads the slot into a window of events not
//! yet finished (see [`WalOptions::max_window`]); claims take from the
//! window, with no query, and settling finishes them: a published event
//! needs nothing more in message mode and has its row removed (or kept,
//! per retention) in table mode; an event that fails for good is written
//! to the outbox table as failed; a retry waits in the window. The slot is
//! confirmed only past transactions whose every event is finished, after
//! the position is recorded in `<table>_positions`, so a relay that dies
//! loses nothing: its successor reads again from the slot's confirmed
//! position, and publishes at most the unfinished window twice.
//!
//! One relay reads a slot at a time: PostgreSQL lets one connection hold
//! it. Others stand by, claim nothing, and try to take the slot over every
//! [`takeover_interval`](WalOptions::takeover_interval). Before each
//! start the store compares the slot with the recorded position; a slot
//! that is missing, or stands past the position, was lost or created
//! again and may have skipped events, and the relay stops with
//! [`StoreError::Misconfigured`] saying how to recover, rather than read
//! on.
//!
//! ```no_run
//! use tidings_core::OutboxSpec;
//! use tidings_core::memory::MemoryBroker;
//! use tidings_core::relay::Relay;
//! use tidings_postgres::sqlx::PgPool;
//! use tidings_postgres::wal::{WalOptions, WalStore};
//! use tidings_postgres::{LogTailing, PgOutboxOptions, PgOutboxStore};
//!
//! static EVENTS: OutboxSpec<u64> = OutboxSpec::json("order-events").destination("orders");
//!
//! # async fn run(pool: PgPool) -> Result<(), Box<dyn std::error::Error>> {
//! let options = PgOutboxOptions::new().log_tailing(LogTailing::messages());
//! let store = PgOutboxStore::new(pool, options)?;
//! store.migrate().await?;
//!
//! let url = "postgres://relay@127.0.0.1:5432/shop";
//! let wal = WalStore::start(store.clone(), WalOptions::new(url)?.route(&EVENTS))?;
//! let relay = Relay::new(wal.clone(), MemoryBroker::new(), &EVENTS)?.wakeup(wal.wakeup());
//! # let _ = relay;
//! # Ok(())
//! # }
//! ```

mod batch;
mod crashes;
mod options;
mod outcomes;
mod pgoutput;
mod reader;
mod stream;
mod window;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use tidings_core::{
    ClaimRequest, ClaimedRows, LeaseToken, OutboxStats, OutboxStore, PurgeRequest, Requeue,
    StageEvents, StagedEvent, StoreError, Wakeup,
};
use tokio::sync::Notify;
use tokio_util::sync::{CancellationToken, DropGuard};
use uuid::Uuid;

pub use batch::WalBatch;
pub use options::WalOptions;

use crate::PgOutboxStore;
use crate::tailing::{TailMode, Tailing};
use crashes::Crashes;
use window::Window;

/// An outbox store whose claims read a replication slot; see the module
/// docs. Cheap to clone: clones share one reader, which stops when the
/// last clone is dropped.
#[derive(Debug, Clone)]
pub struct WalStore {
    shared: Arc<Shared>,
    _reader: Arc<DropGuard>,
}

/// What the store's handles and its reader share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) store: PgOutboxStore,
    pub(crate) tailing: Tailing,
    pub(crate) options: WalOptions,
    window: Mutex<Window>,
    /// What the session knows of the crashes of the sessions before it.
    crashes: Mutex<Crashes>,
    /// Woken when events arrive or fall due.
    pub(crate) wakeup: Wakeup,
    /// Notified when events leave the window.
    pub(crate) room: Notify,
    /// Why the reader stopped for good, for every claim to report.
    fatal: Mutex<Option<String>>,
    /// Whether this store's reader holds the slot.
    pub(crate) active: AtomicBool,
}

impl Shared {
    pub(crate) fn window(&self) -> MutexGuard<'_, Window> {
        self.window.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn crashes(&self) -> MutexGuard<'_, Crashes> {
        self.crashes.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn stop_for_good(&self, why: String) {
        tracing::error!(slot = %self.tailing.slot, error = %why, "log-tailing relay stopped");
        *self.fatal.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
        self.wakeup.wake();
    }

    fn fatal(&self) -> Option<StoreError> {
        let fatal = self.fatal.lock().unwrap_or_else(|e| e.into_inner());
        fatal.clone().map(StoreError::Misconfigured)
    }
}

impl WalStore {
    /// Starts reading `store`'s slot, on the current Tokio runtime, for
    /// the routes of `options`.
    ///
    /// # Errors
    ///
    /// [`StoreError::Misconfigured`] when `store` does not
    /// [tail the log](crate::PgOutboxOptions::log_tailing);
    /// [`StoreError::Invalid`] when `options` relay no route.
    pub fn start(store: PgOutboxStore, options: WalOptions) -> Result<Self, StoreError> {
        let (tailing, _) = store.tailing()?;
        if options.get_routes().is_empty() {
            return Err(StoreError::Invalid(
                "a log-tailing relay needs the routes it relays: WalOptions::route".to_owned(),
            ));
        }
        let shared = Arc::new(Shared {
            tailing: tailing.clone(),
            store,
            options,
            window: Mutex::default(),
            crashes: Mutex::default(),
            wakeup: Wakeup::new(),
            room: Notify::new(),
            fatal: Mutex::default(),
            active: AtomicBool::new(false),
        });
        let cancel = CancellationToken::new();
        tokio::spawn(reader::run(shared.clone(), cancel.clone()));
        Ok(Self {
            shared,
            _reader: Arc::new(cancel.drop_guard()),
        })
    }

    /// Woken when events arrive or a retry falls due: give it to the
    /// relay ([`Relay::wakeup`](tidings_core::relay::Relay::wakeup)).
    pub fn wakeup(&self) -> Wakeup {
        self.shared.wakeup.clone()
    }

    /// Whether this store's reader holds the slot; a store standing by
    /// claims nothing.
    pub fn is_reading(&self) -> bool {
        self.shared.active.load(Ordering::Acquire)
    }

    /// The outbox store the events are staged in.
    pub fn store(&self) -> &PgOutboxStore {
        &self.shared.store
    }
}

/// Stages through the store it tails, so what it stages comes back through
/// its own slot: a [stored inbox](https://docs.rs/tidings-consumer) can
/// keep its messages in a tailed table and be woken by the log.
impl StageEvents for WalStore {
    async fn stage_events(&self, events: Vec<StagedEvent>) -> Result<(), StoreError> {
        self.shared.store.stage_events(events).await
    }
}

impl OutboxStore for WalStore {
    type Batch = WalBatch;

    async fn claim(&self, request: ClaimRequest<'_>) -> Result<WalBatch, StoreError> {
        if let Some(error) = self.shared.fatal() {
            return Err(error);
        }
        let (generation, mut claimed) = {
            let mut window = self.shared.window();
            let claimed = window.claim(request.route, request.limit);
            (window.generation(), claimed)
        };
        let careful = {
            let crashes = self.shared.crashes();
            crashes.charge(claimed.iter_mut().map(|c| &mut c.record));
            crashes.is_careful()
        };
        let ids: Vec<Uuid> = match careful {
            true => claimed.iter().map(|c| c.record.envelope.event_id).collect(),
            false => Vec::new(),
        };
        let rows = ClaimedRows::new(LeaseToken::new(), Vec::new());
        let batch = WalBatch::new(self.shared.clone(), generation, rows, claimed, careful);
        if !ids.is_empty() {
            // Listed before they are handed out; a batch dropped on error
            // sends them back to the window.
            crashes::handing_out(&self.shared.store, ids).await?;
        }
        Ok(batch)
    }

    async fn sweep_expired(&self, _route: &str, _limit: usize) -> Result<u64, StoreError> {
        // Nothing is leased: a relay that dies hands its window back by
        // the slot, which its successor reads again.
        Ok(0)
    }

    async fn requeue_failed(&self, route: &str, which: Requeue) -> Result<u64, StoreError> {
        self.shared.store.requeue_failed(route, which).await
    }

    async fn delete_failed(&self, route: &str, ids: &[Uuid]) -> Result<u64, StoreError> {
        self.shared.store.delete_failed(route, ids).await
    }

    async fn purge(&self, route: &str, request: PurgeRequest) -> Result<u64, StoreError> {
        self.shared.store.purge(route, request).await
    }

    /// The table's counts; in message mode, whose events have no row until
    /// they fail, with the window's events of the route as pending and in
    /// flight.
    async fn stats(&self, route: &str) -> Result<OutboxStats, StoreError> {
        let mut stats = self.shared.store.stats(route).await?;
        if self.shared.tailing.mode == TailMode::Messages {
            let (waiting, in_flight, oldest) = self.shared.window().counts(route);
            stats.pending += waiting;
            stats.in_flight += in_flight;
            let age = oldest.and_then(|at| SystemTime::now().duration_since(at).ok());
            stats.oldest_pending_age = stats.oldest_pending_age.max(age);
        }
        Ok(stats)
    }
}
