//! A source that counts what passes through it: deliveries, those the
//! broker counts as redelivered, and how each was settled. The stored
//! inbox scenarios read from it when every message is stored (acked) and
//! how often the broker delivered a message again.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use futures::StreamExt;
use futures::stream::BoxStream;
use tidings_core::{AckError, Acker, Delivery, Redelivery, Source, SourceError};

/// What a [`CountingSource`] has seen so far.
#[derive(Debug, Default)]
pub(crate) struct Counts {
    delivered: AtomicU64,
    redelivered: AtomicU64,
    acked: AtomicU64,
    nacked: AtomicU64,
    dead_lettered: AtomicU64,
}

/// A snapshot of [`Counts`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Seen {
    /// Deliveries, first and again.
    pub(crate) delivered: u64,
    /// Deliveries the broker counted past their first.
    pub(crate) redelivered: u64,
    /// Deliveries acked.
    pub(crate) acked: u64,
    /// Deliveries handed back to the broker.
    pub(crate) nacked: u64,
    /// Deliveries dead-lettered.
    pub(crate) dead_lettered: u64,
}

impl Counts {
    /// What has been counted so far.
    pub(crate) fn seen(&self) -> Seen {
        Seen {
            delivered: self.delivered.load(Relaxed),
            redelivered: self.redelivered.load(Relaxed),
            acked: self.acked.load(Relaxed),
            nacked: self.nacked.load(Relaxed),
            dead_lettered: self.dead_lettered.load(Relaxed),
        }
    }
}

/// Wraps a source, counting its deliveries and their settlements.
#[derive(Clone)]
pub(crate) struct CountingSource<S> {
    inner: S,
    counts: Arc<Counts>,
}

impl<S> CountingSource<S> {
    /// Counts what `inner` delivers.
    pub(crate) fn new(inner: S) -> Self {
        Self {
            inner,
            counts: Arc::default(),
        }
    }

    /// The counts, shared with every clone.
    pub(crate) fn counts(&self) -> Arc<Counts> {
        self.counts.clone()
    }
}

impl<S: Source> Source for CountingSource<S> {
    type Acker = CountingAcker<S::Acker>;
    type Stream = BoxStream<'static, Result<Delivery<Self::Acker>, SourceError>>;

    async fn subscribe(&self, queue: &str) -> Result<Self::Stream, SourceError> {
        let stream = self.inner.subscribe(queue).await?;
        let counts = self.counts.clone();
        let counted = stream.map(move |item| {
            let (envelope, count, acker) = item?.into_parts();
            counts.delivered.fetch_add(1, Relaxed);
            if count.is_some_and(|n| n > 1) {
                counts.redelivered.fetch_add(1, Relaxed);
            }
            let acker = CountingAcker {
                inner: acker,
                counts: counts.clone(),
            };
            Ok(Delivery::new(envelope, count, acker))
        });
        Ok(counted.boxed())
    }

    fn messaging_system(&self) -> &'static str {
        self.inner.messaging_system()
    }
}

/// Settles through the wrapped acker and counts how, once it succeeded.
pub(crate) struct CountingAcker<A> {
    inner: A,
    counts: Arc<Counts>,
}

impl<A: Acker> Acker for CountingAcker<A> {
    async fn ack(self) -> Result<(), AckError> {
        self.inner.ack().await?;
        self.counts.acked.fetch_add(1, Relaxed);
        Ok(())
    }

    async fn nack(self, redelivery: Redelivery) -> Result<(), AckError> {
        self.inner.nack(redelivery).await?;
        self.counts.nacked.fetch_add(1, Relaxed);
        Ok(())
    }

    async fn dead_letter(self, reason: String) -> Result<(), AckError> {
        self.inner.dead_letter(reason).await?;
        self.counts.dead_lettered.fetch_add(1, Relaxed);
        Ok(())
    }
}
