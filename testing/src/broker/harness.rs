use std::future::Future;

use tidings_core::{Envelope, Publisher, PublisherExt, Source};

use super::fixtures::{envelope, subscribe};

/// A fresh queue and the clients to use it.
#[derive(Debug, Clone)]
pub struct BrokerFixture<P, S> {
    /// Publishes to `queue` (the envelope's destination).
    pub publisher: P,
    /// Consumes `queue` and `dead_letter_queue`.
    pub source: S,
    /// A queue no other test uses, declared with its dead-letter queue.
    pub queue: String,
    /// Where dead-lettered deliveries of `queue` land.
    pub dead_letter_queue: String,
}

impl<P: Publisher, S: Source> BrokerFixture<P, S> {
    /// Publishes message 1 to `queue` and subscribes to it; returns what
    /// was sent and the stream.
    pub async fn sent_one(&self) -> (Envelope, S::Stream) {
        let sent = envelope(&self.queue, 1);
        self.publisher.publish(&sent).await.expect("publish");
        (sent, subscribe(&self.source, &self.queue).await)
    }
}

/// What a transport gives the broker conformance suite.
pub trait BrokerHarness: Send + Sync + 'static {
    /// The publisher under test.
    type Publisher: Publisher;
    /// The source under test.
    type Source: Source;

    /// Declares a fresh queue with a dead-letter queue. Panics with the setup
    /// command when the broker does not answer. Unsettled deliveries must
    /// come back within a few seconds of their stream being dropped.
    fn fixture(&self) -> impl Future<Output = BrokerFixture<Self::Publisher, Self::Source>> + Send;

    /// Whether delivery counts are exact (1, 2, 3, ..) rather than an
    /// approximation that only tells first deliveries from redeliveries.
    fn exact_delivery_counts(&self) -> bool {
        true
    }

    /// Removes what the harness created (queues, exchanges); called after
    /// each case that passes. The default removes nothing.
    fn teardown(&self) -> impl Future<Output = ()> + Send {
        async {}
    }
}
