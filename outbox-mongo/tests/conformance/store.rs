//! The store conformance suite on MongoDB, with each retention, and the
//! relay's give-up hook. Every case runs on collections of its own.

use crate::support;

use tidings_core::StagedEvent;
use tidings_mongo::{MongoInboxStore, MongoOutboxStore, Retention};
use tidings_testing::store::{InboxHarness, StoreHarness};

/// Remembers the stores it made so their collections go after the case.
struct Mongo(Retention, support::MadeStores);

fn mongo(retention: Retention) -> Mongo {
    Mongo(retention, support::MadeStores::default())
}

impl StoreHarness for Mongo {
    type Store = MongoOutboxStore;

    /// The stand-in server is slow; the ratio of relays to events is what
    /// matters.
    const DRAIN_EVENTS: u32 = 500;

    async fn store(&self) -> MongoOutboxStore {
        self.1.keep(support::store(self.0).await)
    }

    async fn commit(&self, store: &MongoOutboxStore, events: Vec<StagedEvent>) {
        support::commit(store, events).await;
    }

    /// Another process's view: its own client, the same collections.
    async fn peer(&self, store: &MongoOutboxStore, _n: u64) -> MongoOutboxStore {
        MongoOutboxStore::new(support::database().await, store.options().clone()).unwrap()
    }

    async fn teardown(&self) {
        self.1.drop_all().await;
    }
}

impl InboxHarness for Mongo {
    type Inbox = MongoInboxStore;

    fn inbox(&self, store: &MongoOutboxStore) -> MongoInboxStore {
        store.inbox()
    }
}

mod delete_on_publish {
    use super::*;
    tidings_testing::store_conformance!(mongo(Retention::Delete));
    tidings_testing::store_conformance!(give_up: mongo(Retention::Delete));
}

mod keep_published {
    use super::*;
    tidings_testing::store_conformance!(mongo(Retention::Keep));
}
