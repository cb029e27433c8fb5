//! The pipelined drain against the in-memory store.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::memory::{MemoryBatch, MemoryStore};
use crate::relay::{PassReport, Relay, RelayOptions};
use crate::{
    Backoff, ClaimRequest, Envelope, OutboxSpec, OutboxStats, OutboxStore, PublishBatch,
    PublishError, Publisher, PurgeRequest, Requeue, RetryPolicy, StoreError,
};

static EVENTS: OutboxSpec<u32> = OutboxSpec::json("events").destination("events-q");

/// Retried a millisecond after a failure.
static RETRIED: OutboxSpec<u32> =
    OutboxSpec::json("retried")
        .destination("retried-q")
        .retry(RetryPolicy::new().backoff(Backoff::new(
            Duration::from_millis(1),
            Duration::from_millis(1),
        )));

/// Accepts everything and keeps the payloads in arrival order.
#[derive(Clone, Default)]
struct Keep(Arc<Mutex<Vec<u32>>>);

impl Publisher for Keep {
    async fn send(&self, batch: PublishBatch<'_>) -> Vec<Result<(), PublishError>> {
        let mut kept = self.0.lock().expect("not poisoned");
        kept.extend(batch.envelopes().iter().map(number));
        batch.envelopes().iter().map(|_| Ok(())).collect()
    }

    fn messaging_system(&self) -> &'static str {
        "test"
    }
}

/// Accepts everything and keeps the size of each batch handed to it.
#[derive(Clone, Default)]
struct Windows(Arc<Mutex<Vec<usize>>>);

impl Publisher for Windows {
    async fn send(&self, batch: PublishBatch<'_>) -> Vec<Result<(), PublishError>> {
        self.0
            .lock()
            .expect("not poisoned")
            .push(batch.envelopes().len());
        batch.envelopes().iter().map(|_| Ok(())).collect()
    }

    fn messaging_system(&self) -> &'static str {
        "test"
    }
}

/// Says a batch is queued as soon as it has its messages in order, then
/// takes a while to answer; keeps the payloads in the order they were
/// queued and the most batches it was answering at once.
#[derive(Clone, Default)]
struct Overlapping {
    queued: Arc<Mutex<Vec<u32>>>,
    answering: Arc<Mutex<(usize, usize)>>,
}

impl Publisher for Overlapping {
    async fn send(&self, mut batch: PublishBatch<'_>) -> Vec<Result<(), PublishError>> {
        let envelopes = batch.envelopes();
        let queued = batch.take_queued();
        self.queued
            .lock()
            .unwrap()
            .extend(envelopes.iter().map(number));
        drop(queued);
        {
            let mut answering = self.answering.lock().unwrap();
            answering.0 += 1;
            answering.1 = answering.1.max(answering.0);
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        self.answering.lock().unwrap().0 -= 1;
        envelopes.iter().map(|_| Ok(())).collect()
    }

    fn messaging_system(&self) -> &'static str {
        "test"
    }
}

impl Overlapping {
    /// Events `0..events` were queued in order, two batches awaiting their
    /// answers at once, and none is left awaiting.
    fn assert_overlapped(&self, events: u32) {
        let queued = self.queued.lock().unwrap().clone();
        assert_eq!(queued, (0..events).collect::<Vec<_>>(), "queued in order");
        let (answering, most) = *self.answering.lock().unwrap();
        assert_eq!((answering, most), (0, 2), "two batches awaited at once");
    }
}

/// Fails event `n` once, transiently, and accepts everything else; keeps
/// every payload handed to it.
#[derive(Clone)]
struct FailsOnce {
    n: u32,
    seen: Arc<Mutex<Vec<u32>>>,
}

impl Publisher for FailsOnce {
    async fn send(&self, batch: PublishBatch<'_>) -> Vec<Result<(), PublishError>> {
        batch.each(|envelope| self.publish_one(envelope)).await
    }

    fn messaging_system(&self) -> &'static str {
        "test"
    }
}

impl FailsOnce {
    async fn publish_one(&self, envelope: &Envelope) -> Result<(), PublishError> {
        let n = number(envelope);
        let mut seen = self.seen.lock().unwrap();
        seen.push(n);
        match n == self.n && seen.iter().filter(|&&s| s == n).count() == 1 {
            true => Err(PublishError::Timeout),
            false => Ok(()),
        }
    }
}

/// The number an event of these tests carries.
fn number(envelope: &Envelope) -> u32 {
    serde_json::from_slice(&envelope.payload).expect("a u32 payload")
}

/// A drain's steps, in the order they were taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Claim,
    Publish,
}

/// The in-memory store, keeping whether each claim went on past a cursor,
/// and noting each claim among the drain's steps.
#[derive(Clone, Default)]
struct Cursors {
    store: MemoryStore,
    past: Arc<Mutex<Vec<bool>>>,
    steps: Arc<Mutex<Vec<Step>>>,
}

/// Accepts everything, noting each batch handed to it among the drain's
/// steps.
#[derive(Clone)]
struct Stepping(Arc<Mutex<Vec<Step>>>);

impl Publisher for Stepping {
    async fn send(&self, batch: PublishBatch<'_>) -> Vec<Result<(), PublishError>> {
        self.0.lock().unwrap().push(Step::Publish);
        batch.envelopes().iter().map(|_| Ok(())).collect()
    }

    fn messaging_system(&self) -> &'static str {
        "test"
    }
}

impl OutboxStore for Cursors {
    type Batch = MemoryBatch;

    async fn claim(&self, request: ClaimRequest<'_>) -> Result<MemoryBatch, StoreError> {
        self.past.lock().unwrap().push(request.after.is_some());
        self.steps.lock().unwrap().push(Step::Claim);
        self.store.claim(request).await
    }

    async fn sweep_expired(&self, route: &str, limit: usize) -> Result<u64, StoreError> {
        self.store.sweep_expired(route, limit).await
    }

    async fn requeue_failed(&self, route: &str, which: Requeue) -> Result<u64, StoreError> {
        self.store.requeue_failed(route, which).await
    }

    async fn delete_failed(&self, route: &str, ids: &[uuid::Uuid]) -> Result<u64, StoreError> {
        self.store.delete_failed(route, ids).await
    }

    async fn purge(&self, route: &str, request: PurgeRequest) -> Result<u64, StoreError> {
        self.store.purge(route, request).await
    }

    async fn stats(&self, route: &str) -> Result<OutboxStats, StoreError> {
        self.store.stats(route).await
    }
}

/// One drain of `store` through `publisher` with `options`.
async fn drain<S: OutboxStore, P: Publisher>(
    store: &S,
    publisher: P,
    spec: &'static OutboxSpec<u32>,
    options: RelayOptions,
) -> PassReport {
    let relay = Relay::new(store.clone(), publisher, spec).unwrap();
    relay.options(options).drain().await.unwrap()
}

/// Stages `events` events and drains them once through `publisher` with
/// `options`: every one is claimed and published, and none is left.
async fn drain_staged<P: Publisher>(events: u32, publisher: P, options: RelayOptions) {
    let store = staged(events);
    let report = drain(&store, publisher, &EVENTS, options).await;
    let events = events as usize;
    assert_eq!((report.claimed, report.published), (events, events));
    assert_eq!(store.pending_count("events"), 0);
}

/// A store holding `events` pending events numbered from 0, staged in
/// one transaction.
fn staged(events: u32) -> MemoryStore {
    staged_on(&EVENTS, events)
}

/// A store holding `events` pending events of `spec`, numbered from 0.
fn staged_on(spec: &'static OutboxSpec<u32>, events: u32) -> MemoryStore {
    let store = MemoryStore::new();
    let mut ctx = store.begin();
    for n in 0..events {
        ctx.outbox().stage(spec, "test.event", &n).unwrap();
    }
    ctx.commit().unwrap();
    store
}

#[tokio::test]
async fn claims_wider_than_the_publish_window_are_published_a_window_at_a_time() {
    let publisher = Windows::default();
    let options = RelayOptions::default().batch_size(250).publish_window(100);
    drain_staged(620, publisher.clone(), options).await;
    let windows = publisher.0.lock().unwrap().clone();
    // A first claim of one window, as at every start, then claims of
    // 250, 250 and 20, each cut into windows of 100.
    assert_eq!(windows, [100, 100, 100, 50, 100, 100, 50, 20]);
}

/// The numbers of `events` staged events in the order a relay with
/// `drains` drains, claiming 100 at a time, published them.
async fn published_by(drains: usize, events: u32) -> Vec<u32> {
    let publisher = Keep::default();
    let options = RelayOptions::default().batch_size(100).drains(drains);
    drain_staged(events, publisher.clone(), options).await;
    publisher.0.lock().unwrap().clone()
}

#[tokio::test]
async fn a_pipelined_drain_publishes_every_event_once_in_staging_order() {
    let published = published_by(1, 250).await;
    assert_eq!(published, (0..250).collect::<Vec<_>>());
}

#[tokio::test]
async fn parallel_drains_publish_every_event_once() {
    let mut published = published_by(3, 2_050).await;
    published.sort_unstable();
    assert_eq!(published, (0..2_050).collect::<Vec<_>>());
}

/// Drains 1,000 staged events in batches of 100 through an
/// [`Overlapping`] publisher as `wrap` wraps it, and asserts that each
/// batch was published while the one before awaited its answers.
async fn assert_batches_overlap<P: Publisher>(wrap: impl FnOnce(Overlapping) -> P) {
    let publisher = Overlapping::default();
    let options = RelayOptions::default().batch_size(100).drains(1);
    drain_staged(1_000, wrap(publisher.clone()), options).await;
    publisher.assert_overlapped(1_000);
}

#[tokio::test]
async fn the_next_batch_is_published_while_the_last_awaits_its_answers_in_order() {
    assert_batches_overlap(|publisher| publisher).await;
}

/// A wrapper written the obvious way: it stamps a header on every envelope
/// and forwards the batch, token and all, to the publisher it wraps.
#[derive(Clone)]
struct Stamping<P> {
    inner: P,
}

impl<P: Publisher> Publisher for Stamping<P> {
    async fn send(&self, batch: PublishBatch<'_>) -> Vec<Result<(), PublishError>> {
        let stamped: Vec<Envelope> = (batch.envelopes().iter().cloned())
            .map(|mut envelope| {
                envelope.headers.insert("x-stamp".into(), "1".into());
                envelope
            })
            .collect();
        self.inner.send(batch.with_envelopes(&stamped)).await
    }

    fn messaging_system(&self) -> &'static str {
        self.inner.messaging_system()
    }
}

#[tokio::test]
async fn a_wrapped_publisher_keeps_the_overlap_of_batches() {
    assert_batches_overlap(|inner| Stamping { inner }).await;
}

#[tokio::test]
async fn claims_go_on_past_the_last_batch_but_for_one_in_eight_and_the_last() {
    let store = Cursors {
        store: staged(2_050),
        ..Cursors::default()
    };
    let publisher = Keep::default();
    let options = RelayOptions::default().batch_size(100).drains(1);
    let report = drain(&store, publisher.clone(), &EVENTS, options).await;

    assert_eq!((report.claimed, report.published), (2_050, 2_050));
    let published = publisher.0.lock().unwrap().clone();
    assert_eq!(published, (0..2_050).collect::<Vec<_>>());
    let past = store.past.lock().unwrap().clone();
    // The first claim, every eighth after it and the one that closes the
    // drain start from the oldest row; the rest go on past a cursor.
    let from_oldest: Vec<usize> = (0..past.len()).filter(|&i| !past[i]).collect();
    assert_eq!(from_oldest, [0, 8, 16, past.len() - 1], "{past:?}");
    assert_eq!(
        past.len(),
        22,
        "20 full batches, a short one past a cursor, an empty one"
    );
}

#[tokio::test]
async fn a_row_left_behind_the_cursor_is_published_before_the_drain_ends() {
    // Enough batches for the retry to fall due while the drain goes on.
    let store = staged_on(&RETRIED, 20_000);
    let publisher = FailsOnce {
        n: 150,
        seen: Arc::default(),
    };
    let options = RelayOptions::default().batch_size(100).drains(1);
    let report = drain(&store, publisher.clone(), &RETRIED, options).await;

    assert_eq!((report.published, report.rescheduled), (20_000, 1));
    assert_eq!(store.pending_count("retried"), 0);
    let seen = publisher.seen.lock().unwrap().clone();
    let tries: Vec<usize> = (0..seen.len()).filter(|&i| seen[i] == 150).collect();
    assert_eq!(tries.len(), 2, "failed once, then published");
    assert!(
        tries[1] > 300,
        "retried once the cursors had gone past it: {tries:?}"
    );
}

#[tokio::test]
async fn the_next_claim_is_sent_before_the_last_batch_is_published() {
    let store = Cursors {
        store: staged(300),
        ..Cursors::default()
    };
    let publisher = Stepping(Arc::clone(&store.steps));
    let options = RelayOptions::default().batch_size(100).drains(1);
    let report = drain(&store, publisher, &EVENTS, options).await;

    assert_eq!(report.published, 300);
    let steps = store.steps.lock().unwrap().clone();
    // The store works on the second claim while the first batch is
    // published.
    assert_eq!(
        steps[..3],
        [Step::Claim, Step::Claim, Step::Publish],
        "{steps:?}"
    );
}
