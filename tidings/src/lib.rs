// The repository's README is this crate's documentation, so every snippet
// in it is compiled and run as a doctest.
#![doc = include_str!("../README.md")]

// Those snippets, and the guide's, use every store and transport: say so
// rather than fail on missing modules.
#[cfg(all(
    doctest,
    not(all(
        feature = "postgres",
        feature = "mongo",
        feature = "rabbitmq",
        feature = "sqs",
        feature = "consumer"
    ))
))]
compile_error!("the README's and the guide's snippets need `--all-features`");

// The guide in `docs/src`, its chapters as modules so their snippets are
// doctests too.
#[cfg(doctest)]
mod guide;

// What a service names. The plumbing the sibling crates share (span
// builders, the timestamp truncation the stores agree on) stays in
// `tidings_core` and is not shown here.
pub use tidings_core::{
    AckError, Acker, Attempts, Backoff, BoxError, CausalContext, Cause, ClaimCursor, ClaimRequest,
    ClaimedBatch, ClaimedRows, Clock, Codec, CodecError, ConsumerName, ConsumerStats,
    DEAD_LETTER_REASON_HEADER, Delivery, DriftError, Envelope, FIRST_FAILURE_HEADER, FailedFilter,
    FailedRow, Headers, Hlc, HybridClock, InboxAttempts, InboxError, InboxKey, InboxMark,
    InboxPurge, InboxStore, IsolationLevel, JSON_CONTENT_TYPE, JsonCodec, LeaseToken, ManualClock,
    Message, OrderingMode, OutboxAdmin, OutboxBuffer, OutboxRecord, OutboxSpec, OutboxStats,
    OutboxStore, Outcome, PARKED_AT_HEADER, PARKED_DELIVERIES_HEADER, PRIOR_DELIVERIES_HEADER,
    PublishBatch, PublishError, Publisher, PublisherExt, PurgeRequest, PurgeStatus, QueueSpec,
    Queued, QueuedWait, RAW_CONTENT_TYPE, REPLAYED_REASON_HEADER, RawCodec, Redelivery, Requeue,
    Retention, RetryPolicy, Route, SettleReport, Settlement, SharedClock, Source, SourceError,
    SpecError, StageError, StageEvents, Staged, StagedEvent, StoreError, SystemClock, Transient,
    TxHandle, Wakeup, clock, cloudevents, give_up, lifecycle, memory, port, relay, reserved, spec,
    staging,
};

/// The consumer runner and the inbox ([`tidings_consumer`]).
#[cfg(feature = "consumer")]
pub mod consumer {
    pub use tidings_consumer::*;
}

/// The PostgreSQL outbox and inbox stores ([`tidings_postgres`]), with the
/// sqlx they are built on as [`postgres::sqlx`](tidings_postgres::sqlx).
#[cfg(feature = "postgres")]
pub mod postgres {
    pub use tidings_postgres::*;
}

/// The MongoDB outbox and inbox stores ([`tidings_mongo`]), with the driver
/// as [`mongo::mongodb`](tidings_mongo::mongodb).
#[cfg(feature = "mongo")]
pub mod mongo {
    pub use tidings_mongo::*;
}

/// The RabbitMQ transport ([`tidings_rabbitmq`]), with lapin as
/// [`rabbitmq::lapin`](tidings_rabbitmq::lapin).
#[cfg(feature = "rabbitmq")]
pub mod rabbitmq {
    pub use tidings_rabbitmq::*;
}

/// The Amazon SQS transport ([`tidings_sqs`]), with the SDK as
/// [`sqs::aws_sdk_sqs`](tidings_sqs::aws_sdk_sqs).
#[cfg(feature = "sqs")]
pub mod sqs {
    pub use tidings_sqs::*;
}

/// The Kafka transport ([`tidings_kafka`]).
#[cfg(feature = "kafka")]
pub mod kafka {
    pub use tidings_kafka::*;
}

/// What most services name: specs, the lifecycle plan, the relay and, with
/// the `consumer` feature, the consumer, its handler and the inbox.
///
/// ```
/// use tidings::prelude::*;
///
/// static EVENTS: OutboxSpec<u64> = OutboxSpec::json("order-events").destination("orders");
/// static ORDERS: QueueSpec<u64> = QueueSpec::json("orders");
/// EVENTS.check_pair(&ORDERS).unwrap();
/// ```
pub mod prelude {
    #[cfg(feature = "consumer")]
    pub use tidings_consumer::{
        Consumer, ConsumerOptions, EventHandlers, Expired, HandlerError, Inbox, KeyOrder,
        StoredInbox, TxHandle, TypeOptions, UnknownType, handler_fn,
    };
    pub use tidings_core::give_up::{GivenUp, give_up_fn};
    pub use tidings_core::lifecycle::LifecyclePlan;
    pub use tidings_core::relay::{Relay, RelayOptions};
    pub use tidings_core::{Message, OutboxSpec, QueueSpec, Wakeup};
}
