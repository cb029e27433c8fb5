//! The inbox conformance suite on the in-memory store.

use tidings_core::memory::MemoryStore;
use tidings_testing::inbox::InboxHarness;

struct Memory;

impl InboxHarness for Memory {
    type Store = MemoryStore;

    async fn store(&self) -> MemoryStore {
        MemoryStore::new()
    }
}

tidings_testing::inbox_conformance!(Memory);
