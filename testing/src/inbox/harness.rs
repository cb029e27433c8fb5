use std::future::Future;

use tidings_core::InboxStore;

/// What an inbox store gives the inbox conformance suite.
pub trait InboxHarness: Send + Sync + 'static {
    /// The store under test.
    type Store: InboxStore;

    /// A fresh, empty store isolated from every other test (its own schema,
    /// table or collection). Panics with the setup command when the service
    /// does not answer.
    fn store(&self) -> impl Future<Output = Self::Store> + Send;

    /// Removes what the harness created; called after each case that
    /// passes. The default removes nothing.
    fn teardown(&self) -> impl Future<Output = ()> + Send {
        async {}
    }
}
