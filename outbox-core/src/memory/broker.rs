//! The in-memory broker: named queues with dead-letter queues, exact
//! delivery counts, redelivery now or after a delay.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::cloudevents::to_attributes;
use crate::{Envelope, PublishBatch, PublishError, Publisher};

/// Suffix of the dead-letter queue [`MemoryBroker::declare_queue`] creates
/// beside each queue.
pub const DEAD_LETTER_SUFFIX: &str = ".dlq";

/// Settings of a [`MemoryBroker`].
///
/// ```
/// use tidings_core::memory::{MemoryBroker, MemoryBrokerOptions};
///
/// let options = MemoryBrokerOptions::new().duplicate_every(10);
/// assert_eq!(options.get_duplicate_every(), Some(10));
/// let broker = MemoryBroker::with_options(options);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryBrokerOptions {
    max_message_size: usize,
    duplicate_every: Option<u32>,
}

impl MemoryBrokerOptions {
    /// Default [`max_message_size`](Self::max_message_size): 1 MiB.
    pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 1 << 20;

    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }
}

crate::settings!(MemoryBrokerOptions {
    /// Messages larger than this (payload plus attributes) are refused
    /// with [`PublishError::TooLarge`]; default
    /// [`DEFAULT_MAX_MESSAGE_SIZE`](Self::DEFAULT_MAX_MESSAGE_SIZE).
    max_message_size(bytes: usize), get_max_message_size: usize;
    /// Enqueues every n-th accepted message twice (n at least 1), as
    /// at-least-once brokers sometimes do, so consumers can prove they
    /// dedupe; default: never.
    duplicate_every(n: u32) = Some(n.max(1)), get_duplicate_every: Option<u32>;
});

impl Default for MemoryBrokerOptions {
    fn default() -> Self {
        Self {
            max_message_size: Self::DEFAULT_MAX_MESSAGE_SIZE,
            duplicate_every: None,
        }
    }
}

#[derive(Debug, Clone)]
pub(super) struct Stored {
    pub(super) attributes: BTreeMap<String, String>,
    pub(super) payload: Bytes,
    pub(super) deliveries: u32,
}

#[derive(Debug, Default)]
pub(super) struct Queue {
    pub(super) ready: VecDeque<Stored>,
    pub(super) unacked: HashMap<u64, Stored>,
    pub(super) delayed: Vec<(Instant, Stored)>,
    pub(super) dead_letter: Option<String>,
}

impl Queue {
    /// Moves delayed messages that are due to the ready list; returns when
    /// the next one falls due.
    pub(super) fn promote_due(&mut self, now: Instant) -> Option<Instant> {
        let (due, later): (Vec<_>, Vec<_>) = self.delayed.drain(..).partition(|(at, _)| *at <= now);
        self.delayed = later;
        self.ready.extend(due.into_iter().map(|(_, m)| m));
        self.delayed.iter().map(|(at, _)| *at).min()
    }
}

#[derive(Debug, Default)]
pub(super) struct BrokerState {
    pub(super) queues: HashMap<String, Queue>,
    pub(super) next_tag: u64,
    accepted: u64,
}

#[derive(Debug)]
pub(super) struct BrokerInner {
    state: Mutex<BrokerState>,
    pub(super) notify: Notify,
    options: MemoryBrokerOptions,
}

/// A broker in memory. Clones share one broker.
#[derive(Debug, Clone)]
pub struct MemoryBroker {
    pub(super) inner: Arc<BrokerInner>,
}

impl Default for MemoryBroker {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryBroker {
    /// A broker with default options.
    pub fn new() -> Self {
        Self::with_options(MemoryBrokerOptions::default())
    }

    /// A broker with the given options.
    pub fn with_options(options: MemoryBrokerOptions) -> Self {
        let inner = BrokerInner {
            state: Mutex::default(),
            notify: Notify::new(),
            options,
        };
        Self {
            inner: Arc::new(inner),
        }
    }

    /// Declares `name` and its dead-letter queue `name.dlq`; returns the
    /// dead-letter queue's name. Declaring again changes nothing.
    pub fn declare_queue(&self, name: &str) -> String {
        let dead_letter = format!("{name}{DEAD_LETTER_SUFFIX}");
        let mut state = self.lock();
        state.queues.entry(dead_letter.clone()).or_default();
        state.queues.entry(name.to_owned()).or_default().dead_letter = Some(dead_letter.clone());
        dead_letter
    }

    /// Messages waiting in a queue, delayed ones included.
    pub fn depth(&self, queue: &str) -> usize {
        self.lock()
            .queues
            .get(queue)
            .map_or(0, |q| q.ready.len() + q.delayed.len())
    }

    /// Messages delivered from a queue and not yet settled.
    pub fn unacked(&self, queue: &str) -> usize {
        self.lock().queues.get(queue).map_or(0, |q| q.unacked.len())
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, BrokerState> {
        self.inner.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn accept(&self, envelope: &Envelope) -> Result<(), PublishError> {
        let attributes = to_attributes(envelope);
        let size = envelope.payload.len()
            + attributes
                .iter()
                .map(|(k, v)| k.len() + v.len())
                .sum::<usize>();
        let limit = self.inner.options.max_message_size;
        if size > limit {
            return Err(PublishError::TooLarge { size, limit });
        }
        let mut state = self.lock();
        state.accepted += 1;
        let twice = self
            .inner
            .options
            .duplicate_every
            .is_some_and(|n| state.accepted % u64::from(n) == 0);
        let Some(queue) = state.queues.get_mut(&envelope.destination) else {
            return Err(PublishError::Unroutable {
                destination: envelope.destination.clone(),
            });
        };
        let stored = Stored {
            attributes,
            payload: envelope.payload.clone(),
            deliveries: 0,
        };
        if twice {
            queue.ready.push_back(stored.clone());
        }
        queue.ready.push_back(stored);
        Ok(())
    }
}

/// The in-memory broker's `messaging.system`: no broker of the
/// conventions' list, so a name of its own.
pub const MEMORY_SYSTEM: &str = "tidings_memory";

impl Publisher for MemoryBroker {
    async fn send(&self, batch: PublishBatch<'_>) -> Vec<Result<(), PublishError>> {
        let results = batch.envelopes().iter().map(|e| self.accept(e)).collect();
        self.inner.notify.notify_waiters();
        results
    }

    fn messaging_system(&self) -> &'static str {
        MEMORY_SYSTEM
    }
}
