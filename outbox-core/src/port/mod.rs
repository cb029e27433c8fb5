//! The ports: traits the relay engine and the consumer runner are written
//! against, implemented by each store and transport.
//!
//! All of them return `impl Future + Send`; implementors are cheap to clone
//! (pools and channels inside). Each port has one `#[non_exhaustive]` error
//! enum with `is_transient()`, and each backend maps its driver errors into
//! it in one place.

mod chain;
mod claimed;
mod cursor;
mod driver_error;
mod inbox;
mod outbox_admin;
mod outbox_store;
mod parking;
mod publish_batch;
mod publisher;
mod queued;
mod retention;
mod source;
mod stage_events;
mod store_name;

pub use chain::error_chain;
pub use claimed::ClaimedRows;
pub use cursor::ClaimCursor;
pub use driver_error::{DriverErrorClass, caused_by};
pub use inbox::{
    Attempts, ConsumerName, InboxAttempts, InboxError, InboxKey, InboxMark, InboxPurge, InboxStore,
    IsolationLevel,
};
pub use outbox_admin::{ConsumerStats, FailedFilter, FailedRow, OutboxAdmin};
pub use outbox_store::{
    ClaimRequest, ClaimedBatch, LeaseToken, OutboxRecord, OutboxStats, OutboxStore, Outcome,
    PurgeRequest, PurgeStatus, Requeue, SettleReport, Settlement, StoreError,
};
pub use parking::{parked_at_now, truncate_reason};
pub use publish_batch::PublishBatch;
pub use publisher::{PublishError, Publisher, PublisherExt, trace_outcome};
pub use queued::{Queued, QueuedWait};
pub use retention::Retention;
pub use source::{
    AckError, Acker, DEAD_LETTER_REASON_HEADER, Delivery, FIRST_FAILURE_HEADER, PARKED_AT_HEADER,
    PARKED_DELIVERIES_HEADER, PRIOR_DELIVERIES_HEADER, REPLAYED_REASON_HEADER, Redelivery, Source,
    SourceError,
};
pub use stage_events::StageEvents;
pub use store_name::StoreNameRule;

/// Errors that say whether retrying may succeed. Every port error
/// implements it.
pub trait Transient {
    /// Whether retrying the same operation later may succeed.
    fn is_transient(&self) -> bool;
}

macro_rules! transient {
    ($($error:ty),*) => {$(
        impl Transient for $error {
            fn is_transient(&self) -> bool {
                <$error>::is_transient(self)
            }
        }
    )*};
}

transient!(
    StoreError,
    InboxError,
    PublishError,
    SourceError,
    AckError,
    crate::CodecError
);

/// A boxed error from a driver, kept as the source of a port error.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
