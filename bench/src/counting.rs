//! A source that counts what passes through it: deliveries, those the
//! broker counts as redelivered, and how each was settled. The stored
//! inbox scenarios read from it when every message is stored (acked) and
//! how often the broker delivered a message again.

use std::fmt;
use std::ops::Index;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use futures::StreamExt;
use futures::stream::BoxStream;
use tidings_core::{AckError, Acker, Delivery, Redelivery, Source, SourceError};

/// What a [`CountingSource`] counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Count {
    /// Deliveries, first and again.
    Delivered,
    /// Deliveries the broker counted past their first.
    Redelivered,
    /// Deliveries acked.
    Acked,
    /// Deliveries handed back to the broker.
    Nacked,
    /// Deliveries dead-lettered.
    DeadLettered,
}

impl Count {
    /// Every count, in the order of a [`Seen`].
    const ALL: [Count; 5] = [
        Count::Delivered,
        Count::Redelivered,
        Count::Acked,
        Count::Nacked,
        Count::DeadLettered,
    ];
}

/// What a [`CountingSource`] has seen so far.
#[derive(Debug, Default)]
pub(crate) struct Counts([AtomicU64; Count::ALL.len()]);

impl Counts {
    /// What has been counted so far.
    pub(crate) fn seen(&self) -> Seen {
        Seen(self.0.each_ref().map(|count| count.load(Relaxed)))
    }

    fn add(&self, count: Count) {
        self.0[count as usize].fetch_add(1, Relaxed);
    }
}

/// A snapshot of [`Counts`], read by [`Count`].
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Seen([u64; Count::ALL.len()]);

impl Index<Count> for Seen {
    type Output = u64;

    fn index(&self, count: Count) -> &u64 {
        &self.0[count as usize]
    }
}

impl fmt::Debug for Seen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let counts = Count::ALL.map(|count| (count, self[count]));
        f.debug_map().entries(counts).finish()
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
            counts.add(Count::Delivered);
            if count.is_some_and(|n| n > 1) {
                counts.add(Count::Redelivered);
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
        self.counts.add(Count::Acked);
        Ok(())
    }

    async fn nack(self, redelivery: Redelivery) -> Result<(), AckError> {
        self.inner.nack(redelivery).await?;
        self.counts.add(Count::Nacked);
        Ok(())
    }

    async fn dead_letter(self, reason: String) -> Result<(), AckError> {
        self.inner.dead_letter(reason).await?;
        self.counts.add(Count::DeadLettered);
        Ok(())
    }
}
