#![doc = include_str!("../README.md")]

mod backoff;
pub mod clock;
pub mod cloudevents;
mod codec;
mod commit;
mod envelope;
mod getters;
pub mod give_up;
mod hlc;
pub mod lifecycle;
pub mod memory;
mod message;
pub mod port;
pub mod relay;
pub mod reserved;
pub mod spec;
pub mod staging;
pub mod telemetry;
mod tx_handle;
mod wakeup;

pub use backoff::Backoff;
pub use clock::{Clock, ManualClock, SharedClock, SystemClock, truncate_to_micros};
pub use codec::{Codec, CodecError, JSON_CONTENT_TYPE, JsonCodec, RAW_CONTENT_TYPE, RawCodec};
pub use commit::CommitFailure;
pub use envelope::{Envelope, Headers};
pub use hlc::{DriftError, Hlc, HybridClock};
pub use message::Message;
pub use port::{
    AckError, Acker, Attempts, BoxError, ClaimCursor, ClaimRequest, ClaimedBatch, ClaimedRows,
    ConsumerName, ConsumerStats, DEAD_LETTER_REASON_HEADER, Delivery, FIRST_FAILURE_HEADER,
    FailedFilter, FailedRow, InboxAttempts, InboxError, InboxKey, InboxMark, InboxPurge,
    InboxStore, IsolationLevel, LeaseToken, OutboxAdmin, OutboxRecord, OutboxStats, OutboxStore,
    Outcome, PARKED_AT_HEADER, PARKED_DELIVERIES_HEADER, PRIOR_DELIVERIES_HEADER, PublishBatch,
    PublishError, Publisher, PublisherExt, PurgeRequest, PurgeStatus, Queued, QueuedWait,
    REPLAYED_REASON_HEADER, Redelivery, Requeue, Retention, SettleReport, Settlement, Source,
    SourceError, StageEvents, StoreError, Transient,
};
pub use spec::{OrderingMode, OutboxSpec, QueueSpec, RetryPolicy, Route, SpecError};
pub use staging::{CausalContext, Cause, OutboxBuffer, StageError, Staged, StagedEvent};
pub use tx_handle::TxHandle;
pub use wakeup::Wakeup;
