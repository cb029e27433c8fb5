//! A failed commit of a backend's transaction context, restated as each
//! port's error the same way for every backend.

use crate::{InboxError, StoreError};

/// A backend's error for a commit of its transaction context that failed:
/// either the store failed, or what the transaction held was refused (an
/// invalid staged event, say). The backend says which with
/// [`into_store`](Self::into_store); the port errors follow from it.
///
/// ```
/// use tidings_core::memory::MemoryStore;
/// use tidings_core::{CommitFailure, OutboxSpec, StoreError};
///
/// static ORDERS: OutboxSpec<u32> = OutboxSpec::json("orders").destination("orders");
///
/// # fn main() -> Result<(), tidings_core::StageError> {
/// let store = MemoryStore::new();
/// let mut ctx = store.begin();
/// ctx.outbox().stage(&ORDERS, "order.placed", &1)?.ordering_key("");
/// let error = ctx.commit().unwrap_err();
/// assert!(matches!(error.into_store_error(), StoreError::Invalid(_)));
/// # Ok(())
/// # }
/// ```
pub trait CommitFailure: std::error::Error + Sized {
    /// The store's error, where the store failed; the error as it is where
    /// what the transaction held was refused.
    ///
    /// # Errors
    ///
    /// `Err(self)` where the failure is not the store's.
    fn into_store(self) -> Result<StoreError, Self>;

    /// The outbox store's error for the failed commit: the store's error as
    /// it is, anything else an invalid transaction.
    fn into_store_error(self) -> StoreError {
        self.into_store()
            .unwrap_or_else(|other| StoreError::Invalid(other.to_string()))
    }

    /// The inbox's error for the failed commit: the store's error as the
    /// inbox reports it, anything else an invalid transaction.
    fn into_inbox_error(self) -> InboxError {
        match self.into_store() {
            Ok(error) => InboxError::from(error),
            Err(other) => InboxError::Invalid(other.to_string()),
        }
    }
}
