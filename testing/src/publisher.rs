//! Test brokers that answer one envelope at a time, made publishers by
//! [`PublishEach`].

use std::future::Future;

use tidings_core::{Envelope, PublishBatch, PublishError, Publisher};

/// A test broker that answers each envelope of a batch on its own.
pub trait PublishOne: Clone + Send + Sync + 'static {
    /// Publishes one envelope and answers for it.
    fn publish_one(
        &self,
        envelope: &Envelope,
    ) -> impl Future<Output = Result<(), PublishError>> + Send;
}

/// The [`Publisher`] of a [`PublishOne`] broker: publishes every envelope
/// of a batch at once with [`PublishOne::publish_one`], as messaging
/// system `test`.
///
/// ```
/// use tidings_core::{Envelope, PublishError};
/// use tidings_testing::publisher::{PublishEach, PublishOne};
///
/// /// Accepts everything.
/// #[derive(Clone)]
/// struct Accepting;
///
/// impl PublishOne for Accepting {
///     async fn publish_one(&self, _envelope: &Envelope) -> Result<(), PublishError> {
///         Ok(())
///     }
/// }
///
/// let publisher = PublishEach::new(Accepting);
/// # let _ = publisher;
/// ```
#[derive(Debug, Clone, Default)]
pub struct PublishEach<P>(P);

impl<P: PublishOne> PublishEach<P> {
    /// The publisher of `broker`.
    pub fn new(broker: P) -> Self {
        Self(broker)
    }

    /// The broker, to ask what it received.
    pub fn get_ref(&self) -> &P {
        &self.0
    }
}

impl<P: PublishOne> Publisher for PublishEach<P> {
    async fn send(&self, batch: PublishBatch<'_>) -> Vec<Result<(), PublishError>> {
        batch.each(|envelope| self.0.publish_one(envelope)).await
    }

    fn messaging_system(&self) -> &'static str {
        "test"
    }
}
