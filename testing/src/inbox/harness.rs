use std::future::Future;

use tidings_core::{InboxAttempts, InboxPurge, InboxStore, OutboxSpec};

/// The route of the events the suite's handlers stage in the inbox's
/// transaction, standing for the handler's own writes.
pub static REACTIONS: OutboxSpec<u64> =
    OutboxSpec::json("inbox-reactions").destination("reactions");

/// What an inbox store gives the inbox conformance suite.
pub trait InboxHarness: Send + Sync + 'static {
    /// The store under test, with the attempt counts and the retention
    /// every store of the project keeps.
    type Store: InboxAttempts + InboxPurge;

    /// A fresh, empty store isolated from every other test (its own schema,
    /// table or collection). Panics with the setup command when the service
    /// does not answer.
    fn store(&self) -> impl Future<Output = Self::Store> + Send;

    /// Stages one [`REACTIONS`] event in `tx`: the handler's own write,
    /// which must commit and roll back with the mark.
    fn stage(tx: &mut <Self::Store as InboxStore>::Tx);

    /// The [`REACTIONS`] events committed in `store`.
    fn staged(&self, store: &Self::Store) -> impl Future<Output = u64> + Send;

    /// Removes what the harness created; called after each case that
    /// passes. The default removes nothing.
    fn teardown(&self) -> impl Future<Output = ()> + Send {
        async {}
    }
}
