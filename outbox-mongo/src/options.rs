//! How a store is set up: collection names, retention, clock and the
//! transaction helper's retry budget.

use std::time::Duration;

use tidings_core::{Retention, SharedClock, SystemClock, getters};

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

    /// The outbox collection; default
    /// [`DEFAULT_COLLECTION`](Self::DEFAULT_COLLECTION).
    pub fn collection(mut self, name: impl Into<String>) -> Self {
        self.collection = name.into();
        self
    }

    /// The inbox collection; default
    /// [`DEFAULT_INBOX_COLLECTION`](Self::DEFAULT_INBOX_COLLECTION).
    pub fn inbox_collection(mut self, name: impl Into<String>) -> Self {
        self.inbox_collection = name.into();
        self
    }

    /// What happens to published documents; default [`Retention::Delete`].
    pub fn retention(mut self, retention: Retention) -> Self {
        self.retention = retention;
        self
    }

    /// How long [`transaction`](crate::MongoOutboxStore::transaction) keeps
    /// retrying transient failures before it gives up with the last one;
    /// default [`DEFAULT_TRANSACTION_TIMEOUT`](Self::DEFAULT_TRANSACTION_TIMEOUT).
    pub fn transaction_timeout(mut self, timeout: Duration) -> Self {
        self.transaction_timeout = timeout;
        self
    }

    /// The clock for every time the store writes: `occurred_at`, hybrid
    /// clock stamps, availability, lease expiry and finishing times. Relays
    /// on several machines rely on their clocks roughly agreeing; leases
    /// much longer than the skew keep that safe. Default: the system clock.
    pub fn clock(mut self, clock: SharedClock) -> Self {
        self.clock = clock;
        self
    }
}

getters!(MongoOutboxOptions {
    get_collection: &str = collection;
    get_inbox_collection: &str = inbox_collection;
    get_retention: Retention = retention;
    get_transaction_timeout: Duration = transaction_timeout;
    get_clock: &SharedClock = clock;
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
