//! How a store is set up: collection names, retention, clock and the
//! transaction helper's retry budget.

use std::time::Duration;

use tidings_core::{Retention, SharedClock, SystemClock};

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

    /// The outbox collection.
    pub fn collection(mut self, name: impl Into<String>) -> Self {
        self.collection = name.into();
        self
    }

    /// The inbox collection.
    pub fn inbox_collection(mut self, name: impl Into<String>) -> Self {
        self.inbox_collection = name.into();
        self
    }

    /// What happens to published documents.
    pub fn retention(mut self, retention: Retention) -> Self {
        self.retention = retention;
        self
    }

    /// How long [`transaction`](crate::MongoOutboxStore::transaction) keeps
    /// retrying transient failures before it gives up with the last one.
    pub fn transaction_timeout(mut self, timeout: Duration) -> Self {
        self.transaction_timeout = timeout;
        self
    }

    /// The clock for every time the store writes: `occurred_at`, hybrid
    /// clock stamps, availability, lease expiry and finishing times. Relays
    /// on several machines rely on their clocks roughly agreeing; leases
    /// much longer than the skew keep that safe.
    pub fn clock(mut self, clock: SharedClock) -> Self {
        self.clock = clock;
        self
    }

    /// The outbox collection name.
    pub fn get_collection(&self) -> &str {
        &self.collection
    }

    /// The inbox collection name.
    pub fn get_inbox_collection(&self) -> &str {
        &self.inbox_collection
    }

    /// The retention of published documents.
    pub fn get_retention(&self) -> Retention {
        self.retention
    }

    /// The retry budget of the transaction helper.
    pub fn get_transaction_timeout(&self) -> Duration {
        self.transaction_timeout
    }

    /// The clock.
    pub fn get_clock(&self) -> &SharedClock {
        &self.clock
    }
}

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
