use std::future::Future;

use tidings_core::{OutboxStore, StagedEvent};

/// What a store gives the store conformance suite.
pub trait StoreHarness: Send + Sync + 'static {
    /// The store under test.
    type Store: OutboxStore;

    /// Events the multi-relay drain case stages; a slow stand-in server
    /// may ask for fewer.
    const DRAIN_EVENTS: u32 = 2_000;

    /// A fresh, empty store isolated from every other test (its own schema,
    /// table or collection). Panics with the setup command when the service
    /// does not answer.
    fn store(&self) -> impl Future<Output = Self::Store> + Send;

    /// Commits `events` through the store's own staging path, in one
    /// transaction.
    fn commit(
        &self,
        store: &Self::Store,
        events: Vec<StagedEvent>,
    ) -> impl Future<Output = ()> + Send;

    /// Relay `n`'s view of `store`, as another process would have it: its
    /// own client or connections, and where the store has several claim
    /// modes, perhaps another one. The default shares `store`.
    fn peer(&self, store: &Self::Store, n: u64) -> impl Future<Output = Self::Store> + Send {
        let _ = n;
        let store = store.clone();
        async move { store }
    }

    /// Removes what the harness created (schemas, tables, collections);
    /// called after each case that passes. The default removes nothing.
    fn teardown(&self) -> impl Future<Output = ()> + Send {
        async {}
    }
}
