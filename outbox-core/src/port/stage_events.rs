//! Staging events in a transaction of the store's own, with no business
//! change beside them: what the stored inbox does with what it receives.

use std::future::Future;

use crate::{OutboxStore, StagedEvent, StoreError};

/// A store that stages events on its own, each store through its own
/// staging path, as a context's commit would.
///
/// ```
/// use bytes::Bytes;
/// use tidings_core::memory::MemoryStore;
/// use tidings_core::{Envelope, OutboxStore, StageEvents, StagedEvent};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), tidings_core::StoreError> {
/// let store = MemoryStore::new();
/// let envelope = Envelope::new("billing", "orders", "order.placed", Bytes::from("1"), "application/json");
/// let event = StagedEvent { envelope, delay: None };
/// store.stage_events(vec![event.clone()]).await?;
/// // The id is held already: staging it again adds nothing.
/// store.stage_events(vec![event]).await?;
/// assert_eq!(store.stats("billing").await?.pending, 1);
/// # Ok(())
/// # }
/// ```
pub trait StageEvents: OutboxStore {
    /// Stages `events` in one transaction, skipping an event whose id the
    /// store already holds for its route, so staging a batch again adds
    /// nothing.
    ///
    /// # Errors
    ///
    /// [`StoreError::Invalid`] when an event is invalid (its headers, its
    /// ordering key, an id twice in `events`), and nothing is staged;
    /// errors of the store as for any transaction.
    fn stage_events(
        &self,
        events: Vec<StagedEvent>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
}
