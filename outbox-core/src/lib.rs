#![doc = include_str!("../README.md")]

mod backoff;
pub mod clock;
pub mod cloudevents;
mod codec;
mod envelope;
mod hlc;
mod message;
mod wakeup;
pub mod port;
pub mod spec;
pub mod staging;

pub use backoff::Backoff;
pub use clock::{Clock, ManualClock, SharedClock, SystemClock};
pub use codec::{Codec, CodecError, JSON_CONTENT_TYPE, JsonCodec, RAW_CONTENT_TYPE, RawCodec};
pub use envelope::{Envelope, Headers, truncate_to_micros};
pub use hlc::{DriftError, Hlc, HybridClock};
pub use message::Message;
pub use wakeup::Wakeup;
pub use port::{
    AckError, Acker, BoxError, ClaimRequest, ClaimedBatch, Delivery, InboxError, InboxMark,
    InboxStore, LeaseToken, OutboxRecord, OutboxStats, OutboxStore, Outcome, PublishError,
    Publisher, PurgeRequest, PurgeStatus, Redelivery, Requeue, SettleReport, Settlement, Source,
    SourceError, StoreError,
};
pub use spec::{OrderingMode, OutboxSpec, QueueSpec, RetryPolicy, Route, SpecError};
pub use staging::{OutboxBuffer, StageError, Staged, StagedEvent};
