//! What a relay hands a publisher: a batch of envelopes and the word it
//! waits for before publishing the next one.

use std::future::Future;

use futures::future::join_all;

use super::{PublishError, Queued};
use crate::Envelope;

/// A batch of envelopes to publish, in order, with the [`Queued`] token the
/// relay waits on before it publishes its next batch.
///
/// The one thing a [`Publisher`](super::Publisher) implements is sending a
/// `PublishBatch`, so a wrapper that forwards it forwards the token too and
/// keeps the relay's pipelining. A publisher that can tell when every
/// message is queued on its way to the broker, in batch order, drops the
/// token then ([`take_queued`](Self::take_queued)); one that cannot keeps
/// the batch until it is answered, and the token goes with it.
///
/// ```
/// use tidings_core::{Envelope, PublishBatch, Queued};
///
/// # futures::executor::block_on(async {
/// let envelopes = vec![Envelope::new(
///     "orders",
///     "orders",
///     "order.placed",
///     bytes::Bytes::from_static(b"{}"),
///     "application/json",
/// )];
/// let (queued, wait) = Queued::new();
/// let mut batch = PublishBatch::queued(&envelopes, queued);
/// assert_eq!(batch.envelopes().len(), 1);
/// drop(batch.take_queued()); // every message is on its way
/// wait.await;
/// # });
/// ```
#[derive(Debug)]
pub struct PublishBatch<'a> {
    envelopes: &'a [Envelope],
    queued: Option<Queued>,
}

impl<'a> PublishBatch<'a> {
    /// A batch nobody waits on to be queued: a plain publish.
    pub fn new(envelopes: &'a [Envelope]) -> Self {
        Self {
            envelopes,
            queued: None,
        }
    }

    /// A batch whose `queued` token is dropped once every message of it is
    /// queued on its way to the broker, or with the batch.
    pub fn queued(envelopes: &'a [Envelope], queued: Queued) -> Self {
        Self {
            envelopes,
            queued: Some(queued),
        }
    }

    /// The envelopes, in the order they are to be published.
    pub fn envelopes(&self) -> &'a [Envelope] {
        self.envelopes
    }

    /// The same batch with other envelopes (a wrapper that adds headers,
    /// say), keeping the token. The results must still be one per envelope
    /// of the original batch, in order.
    pub fn with_envelopes<'b>(self, envelopes: &'b [Envelope]) -> PublishBatch<'b> {
        PublishBatch {
            envelopes,
            queued: self.queued,
        }
    }

    /// Takes the token out, for a publisher that says when the batch is
    /// queued: drop what it returns at that moment. Clones of it may be
    /// handed to several channels; the batch counts as queued once the
    /// last is dropped. `None` when nobody waits, or when taken already.
    pub fn take_queued(&mut self) -> Option<Queued> {
        self.queued.take()
    }

    /// Publishes each envelope with `publish`, all at once, and answers
    /// with their results in order: for a publisher that sends one message
    /// at a time. The token is dropped once every envelope is answered.
    ///
    /// ```
    /// use tidings_core::{Envelope, PublishBatch, PublishError, Publisher};
    ///
    /// /// Writes each event to the log.
    /// #[derive(Clone)]
    /// struct Logging;
    ///
    /// impl Logging {
    ///     async fn log(&self, envelope: &Envelope) -> Result<(), PublishError> {
    ///         tracing::info!(id = %envelope.event_id, "published");
    ///         Ok(())
    ///     }
    /// }
    ///
    /// impl Publisher for Logging {
    ///     async fn send(&self, batch: PublishBatch<'_>) -> Vec<Result<(), PublishError>> {
    ///         batch.each(|envelope| self.log(envelope)).await
    ///     }
    ///
    ///     fn messaging_system(&self) -> &'static str {
    ///         "log"
    ///     }
    /// }
    /// ```
    pub async fn each<F, Fut>(self, publish: F) -> Vec<Result<(), PublishError>>
    where
        F: FnMut(&'a Envelope) -> Fut,
        Fut: Future<Output = Result<(), PublishError>>,
    {
        let results = join_all(self.envelopes.iter().map(publish)).await;
        drop(self.queued);
        results
    }
}

impl<'a> From<&'a [Envelope]> for PublishBatch<'a> {
    fn from(envelopes: &'a [Envelope]) -> Self {
        Self::new(envelopes)
    }
}
