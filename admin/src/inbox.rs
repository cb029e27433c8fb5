//! Whether a consumer handled an event.

use serde::Serialize;
use tidings_core::{ConsumerName, InboxAttempts};
use uuid::Uuid;

use crate::stores::AdminStore;
use crate::{Admin, AdminError};

/// What the inbox says of one consumer and one event.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HandledEvent {
    /// The consumer.
    pub consumer: String,
    /// The event id.
    pub event_id: Uuid,
    /// Whether the consumer's inbox has the event marked handled.
    pub handled: bool,
    /// How long ago it was marked, in seconds.
    pub handled_secs: Option<f64>,
    /// Handler attempts started and not committed (counted only for
    /// redeliveries and failures), or `None` where the store counts none.
    pub attempts_started: Option<u32>,
    /// Of those, attempts that ended in a failure.
    pub attempts_finished: Option<u32>,
}

impl<S: AdminStore> Admin<S> {
    /// Whether `consumer` handled `event_id`: when, and the attempts the
    /// inbox counts on it. An event not handled is an answer, not an
    /// error, and so is a consumer the inbox has never seen.
    ///
    /// # Errors
    ///
    /// [`AdminError::Invalid`] when `consumer` is not a legal name;
    /// [`AdminError::Store`] when the inbox's marks cannot be read;
    /// [`AdminError::Inbox`] when its attempt counts cannot be read.
    pub async fn handled(
        &self,
        consumer: &str,
        event_id: Uuid,
    ) -> Result<HandledEvent, AdminError> {
        let name = consumer_name(consumer)?;
        let age = self.store().mark_age(consumer, event_id).await?;
        let attempts = self
            .store()
            .inbox_store()
            .attempts(name.key(event_id))
            .await?;
        Ok(HandledEvent {
            consumer: consumer.to_owned(),
            event_id,
            handled: age.is_some(),
            handled_secs: age.map(|age| age.as_secs_f64()),
            attempts_started: attempts.map(|a| a.started),
            attempts_finished: attempts.map(|a| a.finished),
        })
    }
}

/// `consumer` checked as a consumer's name.
pub(crate) fn consumer_name(consumer: &str) -> Result<ConsumerName, AdminError> {
    ConsumerName::new(consumer).map_err(|e| AdminError::Invalid(e.to_string()))
}
