//! A source whose acks never reach the broker, to kill a consumer between
//! the work it did for a delivery and the ack that frees the broker.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};

use futures::StreamExt;
use futures::stream::BoxStream;
use tidings_core::{AckError, Acker, Delivery, Redelivery, Source, SourceError};

use super::harnessless::tell_parent;

/// Wraps a source so that no ack of its deliveries ever completes: the
/// first ack tells the parent `line` (see
/// [`harnessless::tell_parent`](super::harnessless::tell_parent)) and
/// every ack then waits for good. A parent that kills the child on that
/// line kills it after the consumer's work and before the broker hears of
/// it; nacks and dead letters pass through.
///
/// ```no_run
/// use tidings_testing::faults::HeldAcks;
/// use tidings_testing::faults::harnessless;
///
/// # fn child(source: tidings_core::memory::MemoryBroker) {
/// // In the child: the consumer stores, then stops at its first ack.
/// let source = HeldAcks::new(source, "stored, not acked");
/// # let _ = source;
/// # }
/// # async fn parent() {
/// // In the parent: kill the child when it says so.
/// let mut child = harnessless::spawn_self("MY_CRASH_CHILD", "orders").unwrap();
/// let mut lines = child.lines().unwrap();
/// while lines.next_line().await.unwrap().as_deref() != Some("stored, not acked") {}
/// child.kill().await.unwrap();
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct HeldAcks<S> {
    inner: S,
    hold: Arc<Hold>,
}

/// What every acker of one [`HeldAcks`] shares: the line, and whether it
/// was told.
#[derive(Debug)]
struct Hold {
    line: String,
    told: AtomicBool,
}

impl<S> HeldAcks<S> {
    /// Holds the acks of `inner`'s deliveries, telling the parent `line`
    /// at the first.
    pub fn new(inner: S, line: impl Into<String>) -> Self {
        let hold = Hold {
            line: line.into(),
            told: AtomicBool::new(false),
        };
        Self {
            inner,
            hold: Arc::new(hold),
        }
    }
}

impl<S: Source> Source for HeldAcks<S> {
    type Acker = HeldAck<S::Acker>;
    type Stream = BoxStream<'static, Result<Delivery<Self::Acker>, SourceError>>;

    async fn subscribe(&self, queue: &str) -> Result<Self::Stream, SourceError> {
        let stream = self.inner.subscribe(queue).await?;
        let hold = self.hold.clone();
        let held = stream.map(move |item| {
            let (envelope, count, acker) = item?.into_parts();
            let acker = HeldAck {
                inner: acker,
                hold: hold.clone(),
            };
            Ok(Delivery::new(envelope, count, acker))
        });
        Ok(held.boxed())
    }

    fn messaging_system(&self) -> &'static str {
        self.inner.messaging_system()
    }
}

/// The acker of a [`HeldAcks`] delivery: its ack never completes.
#[derive(Debug)]
pub struct HeldAck<A> {
    inner: A,
    hold: Arc<Hold>,
}

impl<A: Acker> Acker for HeldAck<A> {
    async fn ack(self) -> Result<(), AckError> {
        if !self.hold.told.swap(true, SeqCst) {
            tell_parent(&self.hold.line);
        }
        std::future::pending().await
    }

    async fn nack(self, redelivery: Redelivery) -> Result<(), AckError> {
        self.inner.nack(redelivery).await
    }

    async fn dead_letter(self, reason: String) -> Result<(), AckError> {
        self.inner.dead_letter(reason).await
    }
}
