use std::future::Future;

use tidings_core::{OutboxStore, StagedEvent};

/// What a store gives the store conformance suite.
pub trait StoreHarness: Send + Sync + 'static {
    /// The store under test.
    type Store: OutboxStore;

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

    /// Removes what the harness created (schemas, tables, collections);
    /// called after each case that passes. The default removes nothing.
    fn teardown(&self) -> impl Future<Output = ()> + Send {
        async {}
    }
}
