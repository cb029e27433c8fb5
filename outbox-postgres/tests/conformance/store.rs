//! The store conformance suite on PostgreSQL, with each retention and each
//! claim mode, and on a rotated outbox; where several relays race, half of
//! them claim in the other mode. Every case runs in a schema of its own.
//! The relay's give-up hook runs in each claim mode.

use crate::support;

use std::sync::Mutex;

use tidings_core::StagedEvent;
use tidings_postgres::{
    ClaimMode, Layout, PgInboxStore, PgOutboxOptions, PgOutboxStore, Retention,
};
use tidings_testing::store::{InboxHarness, StoreHarness};

/// Places for the suite's per-key claims held side by side in one case:
/// the suite checks what each claim takes, and `claims/per_key.rs` how
/// the places bound them.
const PLACES: usize = 4;

/// Remembers the stores it made so their schemas go after the case.
struct Pg(PgOutboxOptions, Mutex<Vec<PgOutboxStore>>);

fn pg(retention: Retention) -> Pg {
    let options = PgOutboxOptions::new().retention(retention);
    Pg(options.claim_mode(ClaimMode::Leased), Mutex::default())
}

fn pg_locked(retention: Retention) -> Pg {
    let options = PgOutboxOptions::new()
        .retention(retention)
        .per_key_claims(PLACES);
    Pg(options.claim_mode(ClaimMode::Locked), Mutex::default())
}

fn pg_rotated(mode: ClaimMode) -> Pg {
    let options = PgOutboxOptions::new()
        .layout(Layout::Rotated)
        .per_key_claims(PLACES);
    Pg(options.claim_mode(mode), Mutex::default())
}

impl StoreHarness for Pg {
    type Store = PgOutboxStore;

    const DRAIN_EVENTS: u32 = 10_000;

    async fn store(&self) -> PgOutboxStore {
        let store = support::store_on_options(support::pool(8).await, self.0.clone()).await;
        self.1.lock().unwrap().push(store.clone());
        store
    }

    async fn commit(&self, store: &PgOutboxStore, events: Vec<StagedEvent>) {
        support::commit(store, events).await;
    }

    /// Relay `n` on a pool of its own; odd ones claim in the other mode,
    /// so both modes race on one table.
    async fn peer(&self, store: &PgOutboxStore, n: u64) -> PgOutboxStore {
        let mode = match (self.0.get_claim_mode(), n % 2) {
            (mode, 0) => mode,
            (ClaimMode::Leased, _) => ClaimMode::Locked,
            (_, _) => ClaimMode::Leased,
        };
        let options = store.options().clone().claim_mode(mode);
        PgOutboxStore::new(support::pool(8).await, options).expect("valid names")
    }

    async fn teardown(&self) {
        let stores = std::mem::take(&mut *self.1.lock().unwrap());
        for store in &stores {
            support::drop_schema(store).await;
        }
    }
}

impl InboxHarness for Pg {
    type Inbox = PgInboxStore;

    fn inbox(&self, store: &PgOutboxStore) -> PgInboxStore {
        store.inbox()
    }
}

mod delete_on_publish {
    use super::*;
    tidings_testing::store_conformance!(pg(Retention::Delete));
    tidings_testing::store_conformance!(give_up: pg(Retention::Delete));
}

mod keep_published {
    use super::*;
    tidings_testing::store_conformance!(pg(Retention::Keep));
}

mod locked_delete_on_publish {
    use super::*;
    tidings_testing::store_conformance!(locked: pg_locked(Retention::Delete));
    tidings_testing::store_conformance!(give_up: pg_locked(Retention::Delete));
}

mod locked_keep_published {
    use super::*;
    tidings_testing::store_conformance!(locked: pg_locked(Retention::Keep));
}

mod rotated {
    use super::*;
    tidings_testing::store_conformance!(pg_rotated(ClaimMode::Leased));
}

mod rotated_locked {
    use super::*;
    tidings_testing::store_conformance!(locked: pg_rotated(ClaimMode::Locked));
}
