//! The store conformance suite on MongoDB, with each retention. Every case
//! runs on collections of its own.

mod support;

use tidings_core::StagedEvent;
use tidings_mongo::{MongoOutboxStore, Retention};
use tidings_testing::store::StoreHarness;

struct Mongo(Retention);

impl StoreHarness for Mongo {
    type Store = MongoOutboxStore;

    async fn store(&self) -> MongoOutboxStore {
        support::store(self.0).await
    }

    async fn commit(&self, store: &MongoOutboxStore, events: Vec<StagedEvent>) {
        support::commit(store, events).await;
    }
}

mod delete_on_publish {
    use super::*;
    tidings_testing::store_conformance!(Mongo(Retention::Delete));
}

mod keep_published {
    use super::*;
    tidings_testing::store_conformance!(Mongo(Retention::Keep));
}
