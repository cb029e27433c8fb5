//! The store conformance suite behind a real PgBouncer in transaction mode
//! (`PGBOUNCER_URL`), which carries no prepared statement and no session
//! state from one transaction to the next, in each claim mode; and the
//! inbox conformance suite.

use crate::support;

use std::sync::Mutex;

use support::pooler::{pooled_pool, pooled_store, pooled_store_on};
use tidings_core::StagedEvent;
use tidings_postgres::{ClaimMode, PgOutboxOptions, PgOutboxStore, Retention};
use tidings_testing::store::StoreHarness;

/// Remembers the stores it made so their schemas go after the case.
struct Pooled(Retention, ClaimMode, Mutex<Vec<PgOutboxStore>>);

fn pooled(retention: Retention, mode: ClaimMode) -> Pooled {
    Pooled(retention, mode, Mutex::default())
}

impl StoreHarness for Pooled {
    type Store = PgOutboxStore;

    async fn store(&self) -> PgOutboxStore {
        // Room for the suite's per-key claims held side by side, as in
        // conformance.rs.
        let options = PgOutboxOptions::new().retention(self.0).claim_mode(self.1);
        let store = pooled_store_on(pooled_pool(8).await, options.per_key_claims(4)).await;
        self.2.lock().unwrap().push(store.clone());
        store
    }

    async fn commit(&self, store: &PgOutboxStore, events: Vec<StagedEvent>) {
        support::commit(store, events).await;
    }

    async fn teardown(&self) {
        let stores = std::mem::take(&mut *self.2.lock().unwrap());
        for store in &stores {
            support::drop_schema(store).await;
        }
    }
}

mod leased {
    use super::*;
    tidings_testing::store_conformance!(pooled(Retention::Delete, ClaimMode::Leased));
}

mod leased_keep_published {
    use super::*;
    tidings_testing::store_conformance!(pooled(Retention::Keep, ClaimMode::Leased));
}

mod locked {
    use super::*;
    tidings_testing::store_conformance!(locked: pooled(Retention::Delete, ClaimMode::Locked));
}

mod locked_keep_published {
    use super::*;
    tidings_testing::store_conformance!(locked: pooled(Retention::Keep, ClaimMode::Locked));
}

/// The inbox conformance suite behind the pooler: marks, duplicates and
/// the count of handler attempts, whose writes commit on their own.
struct PooledInbox(Mutex<Vec<PgOutboxStore>>);

impl tidings_testing::inbox::InboxHarness for PooledInbox {
    type Store = tidings_postgres::PgInboxStore;

    async fn store(&self) -> tidings_postgres::PgInboxStore {
        let store = pooled_store(Retention::Delete, ClaimMode::Leased).await;
        self.0.lock().unwrap().push(store.clone());
        store.inbox()
    }

    fn stage(tx: &mut tidings_postgres::PgContext<'static>) {
        tx.outbox()
            .stage(&tidings_testing::inbox::REACTIONS, "reaction", &1)
            .unwrap();
    }

    async fn staged(&self, store: &tidings_postgres::PgInboxStore) -> u64 {
        use tidings_core::OutboxStore;
        let route = tidings_testing::inbox::REACTIONS.name();
        store.store().stats(route).await.unwrap().pending
    }

    async fn teardown(&self) {
        let stores = std::mem::take(&mut *self.0.lock().unwrap());
        for store in &stores {
            support::drop_schema(store).await;
        }
    }
}

mod inbox {
    use super::*;
    tidings_testing::inbox_conformance!(PooledInbox(Mutex::default()));
}
