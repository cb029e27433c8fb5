//! What an operation can fail with, each case saying what to do.

use tidings_core::{BoxError, InboxError, StoreError};
use uuid::Uuid;

/// An admin operation that failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdminError {
    /// No row of the store names this route.
    #[error("unknown route {route:?}; the routes staged are: {}", list(known))]
    UnknownRoute {
        /// The route asked for.
        route: String,
        /// The routes the store knows.
        known: Vec<String>,
    },
    /// The inbox has no mark of this consumer.
    #[error(
        "unknown consumer {consumer:?}; the inbox has marks of: {}",
        list(known)
    )]
    UnknownConsumer {
        /// The consumer asked for.
        consumer: String,
        /// The consumers the inbox has marks of.
        known: Vec<String>,
    },
    /// No failed row of the route has this event id.
    #[error(
        "no failed row {id} on route {route:?}; `failed list --route {route}` shows the failed rows"
    )]
    NotFound {
        /// The route.
        route: String,
        /// The event id asked for.
        id: Uuid,
    },
    /// No dead letter in the queue has this id.
    #[error("no dead letter {id:?} in {queue:?}; `dead-letters list` shows what it holds")]
    NoDeadLetter {
        /// The dead-letter queue.
        queue: String,
        /// The message id asked for.
        id: String,
    },
    /// The queue does not exist on the broker.
    #[error("queue {queue:?} does not exist on the broker; {hint}")]
    UnknownQueue {
        /// The queue.
        queue: String,
        /// What to do about it.
        hint: &'static str,
    },
    /// No store of the tenants has this id.
    #[error("unknown tenant {tenant:?}; the tenants are: {}", list(known))]
    UnknownTenant {
        /// The tenant asked for.
        tenant: String,
        /// The tenants' ids.
        known: Vec<String>,
    },
    /// The admin page shows no stored inbox of this name.
    #[error("unknown stored inbox {name:?}; the page shows: {}", list(known))]
    UnknownStoredInbox {
        /// The stored inbox asked for.
        name: String,
        /// The stored inboxes the page shows.
        known: Vec<String>,
    },
    /// A request the operations refuse.
    #[error("{0}")]
    Invalid(String),
    /// A socket of the admin page failed.
    #[error("{0}")]
    Io(String, #[source] std::io::Error),
    /// The outbox store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The inbox store failed.
    #[error(transparent)]
    Inbox(#[from] InboxError),
    /// The broker failed or went away; what was not settled stays where it
    /// was, so running the operation again is safe.
    #[error("the broker failed; nothing unsettled was lost, run the command again once it is back")]
    Broker(#[source] BoxError),
}

impl AdminError {
    /// Whether retrying the same operation later may succeed.
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Store(e) => e.is_transient(),
            Self::Inbox(e) => e.is_transient(),
            Self::Broker(_) => true,
            _ => false,
        }
    }
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}
