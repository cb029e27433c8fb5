//! How a store is set up: collection names, retention, clock and the
//! transaction helper's retry budget.

use std::time::Duration;

use tidings_core::{Retention, SharedClock, SystemClock, settings};

/// Options of a [`MongoOutboxStore`](crate::MongoOutboxStore).
///
/// ```
/// use tidings_mongo::{MongoOutboxOptions, Retention};
///
/// let options = MongoOutboxOptions::new()
///     .collection("order_outbox")
///     .retention(Retention::Keep);
/// assert_eq!(options.get_collection(), "order_outbox");
/// ```
#[derive(Debug, Clone)]
pub struct MongoOutboxOptions {
    collection: String,
    inbox_collection: String,
    retention: Retention,
    transaction_timeout: Duration,
    clock: SharedClock,
}

impl MongoOutboxOptions {
    /// Default outbox collection.
    pub const DEFAULT_COLLECTION: &'static str = "tidings_outbox";
    /// Default inbox collection.
    pub const DEFAULT_INBOX_COLLECTION: &'static str = "tidings_inbox";
    /// Default [`transaction_timeout`](Self::transaction_timeout): how long
    /// [`transaction`](crate::MongoOutboxStore::transaction) keeps retrying,
    /// the same budget the MongoDB drivers use.
    pub const DEFAULT_TRANSACTION_TIMEOUT: Duration = Duration::from_secs(120);

    /// The defaults: `tidings_outbox` and `tidings_inbox`, published
    /// documents deleted, the system clock.
    pub fn new() -> Self {
        Self::default()
    }
}

settings!(MongoOutboxOptions {
    /// The outbox collection; default
    /// [`DEFAULT_COLLECTION`](Self::DEFAULT_COLLECTION).
    collection(name: impl Into<String>) = name.into(), get_collection: &str;
    /// The inbox collection; default
    /// [`DEFAULT_INBOX_COLLECTION`](Self::DEFAULT_INBOX_COLLECTION).
    inbox_collection(name: impl Into<String>) = name.into(), get_inbox_collection: &str;
    /// What happens to published documents; default [`Retention::Delete`].
    retention(retention: Retention), get_retention: Retention;
    /// How long [`transaction`](crate::MongoOutboxStore::transaction) keeps
    /// retrying transient failures before it gives up with the last one;
    /// default [`DEFAULT_TRANSACTION_TIMEOUT`](Self::DEFAULT_TRANSACTION_TIMEOUT).
    transaction_timeout(timeout: Duration), get_transaction_timeout: Duration;
    /// The clock for every time the store writes: `occurred_at`, hybrid
    /// clock stamps, availability, lease expiry and finishing times. Relays
    /// on several machines rely on their clocks roughly agreeing; leases
    /// much longer than the skew keep that safe. Default: the system clock.
    clock(clock: SharedClock), get_clock: &SharedClock;
});

impl Default for MongoOutboxOptions {
    fn default() -> Self {
        Self {
            collection: Self::DEFAULT_COLLECTION.to_owned(),
            inbox_collection: Self::DEFAULT_INBOX_COLLECTION.to_owned(),
            retention: Retention::default(),
            transaction_timeout: Self::DEFAULT_TRANSACTION_TIMEOUT,
            clock: SystemClock::shared(),
        }
    }
}
