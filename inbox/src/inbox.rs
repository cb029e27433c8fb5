//! The dedupe protocol over an [`InboxStore`].

use tidings_core::{
    Attempts, ConsumerName, InboxAttempts, InboxError, InboxMark, InboxStore, IsolationLevel,
    SpecError,
};
use uuid::Uuid;

/// One consumer's inbox on a store.
#[derive(Debug, Clone)]
pub struct Inbox<S> {
    store: S,
    consumer: ConsumerName,
}

impl<S: InboxStore> Inbox<S> {
    /// The inbox of `consumer` (a name like a queue name: letters, digits,
    /// `.`, `_`, `-`).
    ///
    /// # Errors
    ///
    /// [`SpecError::EmptyName`], [`SpecError::NameTooLong`] or
    /// [`SpecError::IllegalName`] when `consumer` is not a legal name.
    pub fn new(store: S, consumer: impl Into<String>) -> Result<Self, SpecError> {
        let consumer = ConsumerName::new(consumer)?;
        Ok(Self { store, consumer })
    }

    /// The consumer's name.
    pub fn consumer(&self) -> &str {
        self.consumer.as_str()
    }

    /// The consumer's name, checked.
    pub fn consumer_name(&self) -> &ConsumerName {
        &self.consumer
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// Opens a transaction and marks `event_id` in it.
    ///
    /// # Errors
    ///
    /// The store's [`InboxError`] when the transaction cannot be opened, the
    /// mark fails or the rollback of a duplicate fails: [`InboxError::Conflict`]
    /// when a concurrent transaction marks the same event,
    /// [`InboxError::Unavailable`] when the database cannot be reached,
    /// [`InboxError::Schema`] when the inbox table is missing,
    /// [`InboxError::Backend`] for any other database error. A transaction
    /// whose mark failed is rolled back.
    pub async fn begin(&self, event_id: Uuid) -> Result<InboxMark<S::Tx>, InboxError> {
        self.begin_at(event_id, None).await
    }

    /// [`begin`](Self::begin) at isolation `level`, or the store's default
    /// where `None`.
    ///
    /// # Errors
    ///
    /// As [`begin`](Self::begin), and [`InboxError::Misconfigured`] when
    /// the store does not offer `level`.
    #[tracing::instrument(skip_all, fields(messaging.consumer.group.name = %self.consumer, messaging.message.id = %event_id), err)]
    pub async fn begin_at(
        &self,
        event_id: Uuid,
        level: Option<IsolationLevel>,
    ) -> Result<InboxMark<S::Tx>, InboxError> {
        let mut tx = self.open_at(level).await?;
        match self.store.mark(&mut tx, self.consumer.key(event_id)).await {
            Ok(InboxMark::Fresh(())) => Ok(InboxMark::Fresh(tx)),
            Ok(InboxMark::Duplicate) => {
                self.store.rollback(tx).await?;
                Ok(InboxMark::Duplicate)
            }
            Err(e) => {
                if let Err(rollback) = self.store.rollback(tx).await {
                    tracing::warn!(error = %rollback, "rollback after a failed mark failed");
                }
                Err(e)
            }
        }
    }

    /// Opens a transaction without marking anything, for several events
    /// to share: mark each with [`mark`](Self::mark) before its handler
    /// runs.
    ///
    /// # Errors
    ///
    /// [`InboxError::Unavailable`] when the database cannot be reached;
    /// [`InboxError::Misconfigured`] when the store's settings do not fit the
    /// server; [`InboxError::Backend`] for any other database error.
    pub async fn open(&self) -> Result<S::Tx, InboxError> {
        self.store.begin().await
    }

    /// [`open`](Self::open) at isolation `level`, or the store's default
    /// where `None`.
    ///
    /// # Errors
    ///
    /// As [`open`](Self::open), and [`InboxError::Misconfigured`] when the
    /// store does not offer `level`.
    pub async fn open_at(&self, level: Option<IsolationLevel>) -> Result<S::Tx, InboxError> {
        match level {
            None => self.store.begin().await,
            Some(level) => self.store.begin_at(level).await,
        }
    }

    /// Marks `event_id` in a transaction from [`open`](Self::open). A
    /// duplicate leaves `tx` usable for the next event.
    ///
    /// # Errors
    ///
    /// [`InboxError::Conflict`] when a concurrent transaction marks the same
    /// event; [`InboxError::Unavailable`] when the database cannot be reached;
    /// [`InboxError::Schema`] when the inbox table is missing;
    /// [`InboxError::Backend`] for any other database error.
    #[tracing::instrument(skip_all, fields(messaging.consumer.group.name = %self.consumer, messaging.message.id = %event_id), err)]
    pub async fn mark(&self, tx: &mut S::Tx, event_id: Uuid) -> Result<InboxMark, InboxError> {
        self.store.mark(tx, self.consumer.key(event_id)).await
    }

    /// Commits the handler's writes with the mark.
    ///
    /// # Errors
    ///
    /// [`InboxError::Conflict`] when a concurrent transaction committed the same
    /// mark or conflicting writes first; [`InboxError::Invalid`] when an event
    /// the handler staged in `tx` is refused; [`InboxError::Unavailable`] when
    /// the database cannot be reached; [`InboxError::Backend`] for any other
    /// database error. Nothing of the transaction is applied.
    pub async fn commit(&self, tx: S::Tx) -> Result<(), InboxError> {
        self.store.commit(tx).await
    }

    /// Discards the handler's writes and the mark, so a redelivery runs the
    /// handler again.
    ///
    /// # Errors
    ///
    /// [`InboxError::Unavailable`] when the database cannot be reached;
    /// [`InboxError::Backend`] for any other database error. The handler's
    /// writes and the mark are discarded either way.
    pub async fn rollback(&self, tx: S::Tx) -> Result<(), InboxError> {
        self.store.rollback(tx).await
    }
}

/// The attempt counts of a store that keeps them ([`InboxAttempts`]).
impl<S: InboxAttempts> Inbox<S> {
    /// Counts a handler attempt starting on `event_id`, committed at once;
    /// returns the attempts so far, this one included, or `None` where the
    /// store counts none. See [`InboxAttempts`].
    ///
    /// # Errors
    ///
    /// [`InboxError::Conflict`] when a concurrent write of the same count
    /// conflicts; [`InboxError::Unavailable`] when the database cannot be
    /// reached; [`InboxError::Schema`] when the attempts table is missing;
    /// [`InboxError::Backend`] for any other database error.
    #[tracing::instrument(skip_all, fields(messaging.consumer.group.name = %self.consumer, messaging.message.id = %event_id), err)]
    pub async fn start_attempt(&self, event_id: Uuid) -> Result<Option<Attempts>, InboxError> {
        self.store.start_attempt(self.consumer.key(event_id)).await
    }

    /// The attempts counted so far on `event_id`, counting none; `None`
    /// where the store counts none.
    ///
    /// # Errors
    ///
    /// [`InboxError::Unavailable`] when the database cannot be reached;
    /// [`InboxError::Schema`] when the attempts table is missing;
    /// [`InboxError::Backend`] for any other database error.
    #[tracing::instrument(skip_all, fields(messaging.consumer.group.name = %self.consumer, messaging.message.id = %event_id), err)]
    pub async fn attempts(&self, event_id: Uuid) -> Result<Option<Attempts>, InboxError> {
        self.store.attempts(self.consumer.key(event_id)).await
    }

    /// Counts an attempt on `event_id` that ended without a commit; its
    /// start too unless [`start_attempt`](Self::start_attempt) counted it.
    ///
    /// # Errors
    ///
    /// [`InboxError::Conflict`] when a concurrent write of the same count
    /// conflicts; [`InboxError::Unavailable`] when the database cannot be
    /// reached; [`InboxError::Schema`] when the attempts table is missing;
    /// [`InboxError::Backend`] for any other database error.
    #[tracing::instrument(skip_all, fields(messaging.consumer.group.name = %self.consumer, messaging.message.id = %event_id), err)]
    pub async fn finish_attempt(
        &self,
        event_id: Uuid,
        start_counted: bool,
    ) -> Result<(), InboxError> {
        let key = self.consumer.key(event_id);
        self.store.finish_attempt(key, start_counted).await
    }

    /// Deletes the attempts counted for `event_id` within `tx`, so they go
    /// when the handler's work commits.
    ///
    /// # Errors
    ///
    /// [`InboxError::Conflict`] when a concurrent write of the same count
    /// conflicts; [`InboxError::Unavailable`] when the database cannot be
    /// reached; [`InboxError::Schema`] when the attempts table is missing;
    /// [`InboxError::Backend`] for any other database error.
    pub async fn clear_attempts(&self, tx: &mut S::Tx, event_id: Uuid) -> Result<(), InboxError> {
        self.store
            .clear_attempts(tx, self.consumer.key(event_id))
            .await
    }
}
