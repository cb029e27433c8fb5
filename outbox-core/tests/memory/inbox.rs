//! The inbox conformance suite on the in-memory store.

use tidings_core::memory::{MemoryContext, MemoryStore};
use tidings_testing::inbox::{InboxHarness, REACTIONS};

struct Memory;

impl InboxHarness for Memory {
    type Store = MemoryStore;

    async fn store(&self) -> MemoryStore {
        MemoryStore::new()
    }

    fn stage(tx: &mut MemoryContext) {
        tx.outbox().stage(&REACTIONS, "reaction", &1).unwrap();
    }

    async fn staged(&self, store: &MemoryStore) -> u64 {
        store.pending_count(REACTIONS.name())
    }
}

tidings_testing::inbox_conformance!(Memory);
