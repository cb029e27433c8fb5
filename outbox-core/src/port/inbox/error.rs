//! How an inbox operation fails.

use crate::port::{BoxError, StoreError};

/// An inbox operation that failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InboxError {
    /// The database could not be reached or dropped the connection.
    #[error("inbox store unavailable")]
    Unavailable(#[source] BoxError),
    /// A concurrent transaction conflicted (for example the same event being
    /// handled by two consumers at once); retrying resolves it.
    #[error("inbox write conflict")]
    Conflict(#[source] BoxError),
    /// The inbox table or collection is missing or out of date.
    #[error("inbox schema problem: {0}")]
    Schema(String),
    /// A request the store refuses, such as an event staged in the
    /// transaction that does not fit it.
    #[error("invalid inbox request: {0}")]
    Invalid(String),
    /// The store's settings do not fit the server it reaches; the message
    /// names the setting that fixes it.
    #[error("inbox store misconfigured: {0}")]
    Misconfigured(String),
    /// Any other backend failure.
    #[error("inbox store failed")]
    Backend(#[source] BoxError),
}

/// A store's error restated for the inbox, where an inbox store works
/// through its outbox store (its transactions, its sessions).
impl From<StoreError> for InboxError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Unavailable(e) => Self::Unavailable(e),
            StoreError::Timeout => Self::Unavailable("operation timed out".into()),
            StoreError::Conflict(e) => Self::Conflict(e),
            StoreError::Schema(s) => Self::Schema(s),
            StoreError::Invalid(s) => Self::Invalid(s),
            StoreError::Misconfigured(s) => Self::Misconfigured(s),
            other => Self::Backend(other.into()),
        }
    }
}

impl InboxError {
    /// The error of a store asked for an isolation level it does not
    /// offer.
    pub fn not_offered(level: super::IsolationLevel) -> Self {
        Self::Misconfigured(format!(
            "this inbox store does not offer {level} transactions"
        ))
    }

    /// Whether retrying later may succeed.
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Unavailable(_) | Self::Conflict(_))
    }
}
