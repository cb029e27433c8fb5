//! The stores the operations run on: an [`OutboxAdmin`] with its inbox and
//! its schema.

use std::future::Future;

use tidings_core::{InboxAttempts, InboxPurge, OutboxAdmin, StoreError};

#[cfg(feature = "mongo")]
mod mongo;
#[cfg(feature = "postgres")]
mod postgres;

/// An outbox store with what operators manage around it: its inbox and its
/// schema (tables or indexes). Implemented for `PgOutboxStore` (feature
/// `postgres`) and `MongoOutboxStore` (feature `mongo`).
pub trait AdminStore: OutboxAdmin {
    /// The inbox store beside the outbox.
    type Inbox: InboxAttempts + InboxPurge;

    /// The inbox store.
    fn inbox_store(&self) -> Self::Inbox;

    /// Brings the schema up to date; says what it did.
    ///
    /// # Errors
    ///
    /// [`StoreError::Schema`] when a table or index in the way has a name the
    /// store needs; [`StoreError::Misconfigured`] behind a transaction pooler
    /// the store was not told of; [`StoreError::Unavailable`] when the database
    /// cannot be reached.
    fn migrate_schema(&self) -> impl Future<Output = Result<String, StoreError>> + Send;

    /// Checks that the schema is what this build needs.
    ///
    /// # Errors
    ///
    /// [`StoreError::Schema`] naming what is missing or out of date;
    /// [`StoreError::Unavailable`] when the database cannot be reached.
    fn verify_schema(&self) -> impl Future<Output = Result<(), StoreError>> + Send;
}
