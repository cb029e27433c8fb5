//! The inbox conformance suite on MongoDB: marks recorded in the
//! handler's transaction, duplicates reported without breaking it, a
//! concurrent mark refused as a transient conflict, attempt counts.

use crate::support::{MadeStores, store};
use tidings_core::OutboxStore;
use tidings_mongo::{MongoContext, MongoInboxStore, Retention};
use tidings_testing::inbox::{InboxHarness, REACTIONS};

/// Remembers the stores it made so their collections go after the case.
struct Mongo(MadeStores);

impl InboxHarness for Mongo {
    type Store = MongoInboxStore;

    async fn store(&self) -> MongoInboxStore {
        self.0.keep(store(Retention::Delete).await).inbox()
    }

    fn stage(tx: &mut MongoContext) {
        tx.outbox().stage(&REACTIONS, "reaction", &1).unwrap();
    }

    async fn staged(&self, store: &MongoInboxStore) -> u64 {
        store.store().stats(REACTIONS.name()).await.unwrap().pending
    }

    async fn teardown(&self) {
        self.0.drop_all().await;
    }
}

tidings_testing::inbox_conformance!(Mongo(MadeStores::default()));
