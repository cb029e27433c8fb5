//! The store conformance suite on the in-memory store, with each retention,
//! and the relay's give-up hook.

use tidings_core::Retention;
use tidings_core::StagedEvent;
use tidings_core::memory::{MemoryStore, MemoryStoreOptions};
use tidings_testing::store::{InboxHarness, StoreHarness};

struct Memory(Retention);

impl StoreHarness for Memory {
    type Store = MemoryStore;

    async fn store(&self) -> MemoryStore {
        MemoryStore::with_options(MemoryStoreOptions::new().retention(self.0))
    }

    async fn commit(&self, store: &MemoryStore, events: Vec<StagedEvent>) {
        let mut ctx = store.begin();
        ctx.outbox().extend(events);
        ctx.commit().expect("commit");
    }
}

impl InboxHarness for Memory {
    type Inbox = MemoryStore;

    fn inbox(&self, store: &MemoryStore) -> MemoryStore {
        store.clone()
    }
}

mod delete_on_publish {
    use super::*;
    tidings_testing::store_conformance!(Memory(Retention::Delete));
    tidings_testing::store_conformance!(give_up: Memory(Retention::Delete));
}

mod keep_published {
    use super::*;
    tidings_testing::store_conformance!(Memory(Retention::Keep));
}
