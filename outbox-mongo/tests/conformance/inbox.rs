//! The inbox conformance suite on MongoDB: marks recorded in the
//! handler's transaction, duplicates reported without breaking it, a
//! concurrent mark refused as a transient conflict, attempt counts.

use std::sync::Mutex;

use crate::support::{drop_collections, store};
use tidings_core::OutboxStore;
use tidings_mongo::{MongoContext, MongoInboxStore, MongoOutboxStore, Retention};
use tidings_testing::inbox::{InboxHarness, REACTIONS};

/// Remembers the stores it made so their collections go after the case.
struct Mongo(Mutex<Vec<MongoOutboxStore>>);

impl InboxHarness for Mongo {
    type Store = MongoInboxStore;

    async fn store(&self) -> MongoInboxStore {
        let store = store(Retention::Delete).await;
        self.0.lock().unwrap().push(store.clone());
        store.inbox()
    }

    fn stage(tx: &mut MongoContext) {
        tx.outbox().stage(&REACTIONS, "reaction", &1).unwrap();
    }

    async fn staged(&self, store: &MongoInboxStore) -> u64 {
        store.store().stats(REACTIONS.name()).await.unwrap().pending
    }

    async fn teardown(&self) {
        let stores = std::mem::take(&mut *self.0.lock().unwrap());
        for store in &stores {
            drop_collections(store).await;
        }
    }
}

tidings_testing::inbox_conformance!(Mongo(Mutex::default()));
