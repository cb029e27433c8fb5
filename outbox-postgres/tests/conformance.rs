//! The store conformance suite on PostgreSQL, with each retention. Every
//! case runs in a schema of its own.

mod support;

use std::sync::Mutex;

use tidings_core::StagedEvent;
use tidings_postgres::{PgOutboxStore, Retention};
use tidings_testing::store::StoreHarness;

/// Remembers the stores it made so their schemas go after the case.
struct Pg(Retention, Mutex<Vec<PgOutboxStore>>);

fn pg(retention: Retention) -> Pg {
    Pg(retention, Mutex::default())
}

impl StoreHarness for Pg {
    type Store = PgOutboxStore;

    async fn store(&self) -> PgOutboxStore {
        let store = support::store(self.0).await;
        self.1.lock().unwrap().push(store.clone());
        store
    }

    async fn commit(&self, store: &PgOutboxStore, events: Vec<StagedEvent>) {
        support::commit(store, events).await;
    }

    async fn teardown(&self) {
        let stores = std::mem::take(&mut *self.1.lock().unwrap());
        for store in &stores {
            support::drop_schema(store).await;
        }
    }
}

mod delete_on_publish {
    use super::*;
    tidings_testing::store_conformance!(pg(Retention::Delete));
}

mod keep_published {
    use super::*;
    tidings_testing::store_conformance!(pg(Retention::Keep));
}
