//! The inbox conformance suite on PostgreSQL: marks recorded in the
//! handler's transaction, duplicates skipped without aborting it,
//! concurrent marks waiting for the first, attempt counts.

use crate::support;

use std::sync::Mutex;

use support::{drop_schema, store};
use tidings_core::OutboxStore;
use tidings_postgres::{PgContext, PgInboxStore, PgOutboxStore, Retention};
use tidings_testing::inbox::{InboxHarness, REACTIONS};

/// Remembers the stores it made so their schemas go after the case.
struct Pg(Mutex<Vec<PgOutboxStore>>);

impl InboxHarness for Pg {
    type Store = PgInboxStore;

    async fn store(&self) -> PgInboxStore {
        let store = store(Retention::Delete).await;
        self.0.lock().unwrap().push(store.clone());
        store.inbox()
    }

    fn stage(tx: &mut PgContext<'static>) {
        tx.outbox().stage(&REACTIONS, "reaction", &1).unwrap();
    }

    async fn staged(&self, store: &PgInboxStore) -> u64 {
        store.store().stats(REACTIONS.name()).await.unwrap().pending
    }

    async fn teardown(&self) {
        let stores = std::mem::take(&mut *self.0.lock().unwrap());
        for store in &stores {
            drop_schema(store).await;
        }
    }
}

tidings_testing::inbox_conformance!(Pg(Mutex::default()));
