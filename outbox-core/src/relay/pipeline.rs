//! A pipelined drain for unordered routes: while one batch is published,
//! the one before is settled and then the next is claimed, so a backlog
//! drains at the pace of the publish or of the store's two steps,
//! whichever is slower, instead of their sum.
//!
//! The store's two steps run at the same time, each on a connection of its
//! own: with publishing that leaves the cores idle (wide windows, or a
//! broker on another machine) the store's round trips are what a drain
//! waits for, and the database works on the settle and the claim at once.
//!
//! At most three batches are held at once by a drain (one of each), all
//! under their own leases; with [`drains`](RelayOptions::drains) above one,
//! each drain holds its own. A batch whose next claim is still waiting once it has been
//! published is settled at once instead of on the next turn, so a claim
//! never waits on a batch that waits for it. A batch once claimed is
//! always published and settled: after a failed settle or claim, the
//! pipeline stops claiming, finishes what it holds and then reports the
//! first error, so no claim is left to expire and count as a crash.

use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};

use futures::future::{join, maybe_done};
use tracing::Instrument;

use super::lane::Lane;
use super::pass::{claim, pass_span, publish, settle};
use super::width::ClaimWidth;
use super::{PassReport, RelayOptions};
use crate::{ClaimedBatch, OutboxStore, Publisher, Settlement, StoreError};

/// Drains an unordered route's backlog: one pipelined drain, joined by
/// [`drains`](RelayOptions::drains) − 1 more once its first claim comes
/// back full while claims are wide; returns the sum, or the first error
/// once every drain has settled what it claimed.
pub(super) async fn drain_parallel<S: OutboxStore, P: Publisher>(
    store: &S,
    publisher: &P,
    lane: &Lane,
    config: &RelayOptions,
    width: &ClaimWidth,
) -> Result<PassReport, StoreError> {
    let first = claim(store, lane, config, width)
        .instrument(pass_span(&lane.route))
        .await?;
    let full = first.0.records().len() >= first.1;
    let more = match full && width.is_wide() {
        true => config.drains - 1,
        false => 0,
    };
    let others = (0..more).map(|_| drain_pipelined(store, publisher, lane, config, width, None));
    let (first, others) = join(
        drain_pipelined(store, publisher, lane, config, width, Some(first)),
        futures::future::join_all(others),
    )
    .await;
    let mut total = first?;
    for other in others {
        total.add(other?);
    }
    Ok(total)
}

/// Claims (unless handed its `first` batch), publishes and settles
/// batches, overlapped, until a claim comes back short of a full batch;
/// returns the sum.
async fn drain_pipelined<S: OutboxStore, P: Publisher>(
    store: &S,
    publisher: &P,
    lane: &Lane,
    config: &RelayOptions,
    width: &ClaimWidth,
    first: Option<(S::Batch, usize)>,
) -> Result<PassReport, StoreError> {
    async move {
        let mut total = PassReport::default();
        let mut error = None;
        let first = match first {
            Some(first) => first,
            None => claim(store, lane, config, width).await?,
        };
        let mut batch = Some(first);
        let mut published: Option<(S::Batch, Vec<Settlement>)> = None;
        while let Some((mut current, limit)) = batch.take() {
            let records = current.take_records();
            let claimed = records.len();
            if claimed == 0 {
                break;
            }
            total.claimed += claimed;
            let claim_next = claimed >= limit && error.is_none();
            let previous = published.take();
            let next = maybe_done(settle_then_claim(
                previous, claim_next, store, lane, config, width,
            ));
            let mut next = pin!(next);
            let settlements =
                beside(publish(publisher, lane, config, records), next.as_mut()).await;
            let early = if next.as_mut().output_mut().is_some() {
                published = Some((current, settlements));
                None
            } else {
                // The claim may be waiting for a connection that this
                // batch holds (a store that keeps its batches' rows locked
                // in open transactions, on fewer connections than there
                // are batches in flight): settle it now rather than on the
                // next turn.
                Some(beside(settle(current, settlements, lane), next.as_mut()).await)
            };
            next.as_mut().await;
            let (settled, claimed) = next.as_mut().take_output().unwrap_or_default();
            record(&mut total, &mut error, settled);
            record(&mut total, &mut error, early);
            // After an error nothing more is claimed, but a batch claimed
            // already is still published and settled on the next turn.
            batch = match claimed {
                Some(Ok(next)) => Some(next),
                Some(Err(e)) => {
                    error.get_or_insert(e);
                    None
                }
                None => None,
            };
        }
        if let Some((b, s)) = published {
            record(&mut total, &mut error, Some(settle(b, s, lane).await));
        }
        match error {
            Some(e) => Err(e),
            None => Ok(total),
        }
    }
    .instrument(pass_span(&lane.route))
    .await
}

/// What the store did beside a publish: the previous batch's settle and
/// the next batch's claim with its row limit, each where there was one to
/// do.
type StoreSide<B> = (
    Option<Result<PassReport, StoreError>>,
    Option<Result<(B, usize), StoreError>>,
);

/// Settles the batch published on the last turn and, where `claim_next`
/// asks for it, claims the next one at the same time: the two statements
/// run on connections of their own, so the store works on both at once.
async fn settle_then_claim<S: OutboxStore>(
    previous: Option<(S::Batch, Vec<Settlement>)>,
    claim_next: bool,
    store: &S,
    lane: &Lane,
    config: &RelayOptions,
    width: &ClaimWidth,
) -> StoreSide<S::Batch> {
    let settle = async {
        match previous {
            Some((batch, settlements)) => Some(settle(batch, settlements, lane).await),
            None => None,
        }
    };
    let claim = async {
        match claim_next {
            true => Some(claim(store, lane, config, width).await),
            false => None,
        }
    };
    join(settle, claim).await
}

/// Runs `main` to its end while also driving `side`, which may finish
/// before or after it.
async fn beside<F: Future, G: Future<Output = ()>>(main: F, mut side: Pin<&mut G>) -> F::Output {
    let mut main = pin!(main);
    poll_fn(|cx| {
        let _ = side.as_mut().poll(cx);
        main.as_mut().poll(cx)
    })
    .await
}

/// Adds a settle's counts to `total`, or keeps its error (the first wins).
fn record(
    total: &mut PassReport,
    error: &mut Option<StoreError>,
    settled: Option<Result<PassReport, StoreError>>,
) {
    match settled {
        Some(Ok(report)) => total.add(report),
        Some(Err(e)) => {
            error.get_or_insert(e);
        }
        None => {}
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use crate::memory::MemoryStore;
    use crate::relay::{Relay, RelayOptions};
    use crate::{Envelope, OutboxSpec, PublishError, Publisher};

    static EVENTS: OutboxSpec<u32> = OutboxSpec::json("events").to_queue("events-q");

    /// Accepts everything and keeps the payloads in arrival order.
    #[derive(Clone, Default)]
    struct Keep(Arc<Mutex<Vec<u32>>>);

    impl Publisher for Keep {
        async fn publish(&self, envelope: &Envelope) -> Result<(), PublishError> {
            let n = serde_json::from_slice(&envelope.payload).expect("a u32 payload");
            self.0.lock().expect("not poisoned").push(n);
            Ok(())
        }
    }

    /// Accepts everything and keeps the size of each batch handed to it.
    #[derive(Clone, Default)]
    struct Windows(Arc<Mutex<Vec<usize>>>);

    impl Publisher for Windows {
        async fn publish(&self, _: &Envelope) -> Result<(), PublishError> {
            Ok(())
        }

        async fn publish_batch(&self, envelopes: &[Envelope]) -> Vec<Result<(), PublishError>> {
            self.0.lock().expect("not poisoned").push(envelopes.len());
            envelopes.iter().map(|_| Ok(())).collect()
        }
    }

    /// A store holding `events` pending events numbered from 0, staged in
    /// one transaction.
    fn staged(events: u32) -> MemoryStore {
        let store = MemoryStore::new();
        let mut ctx = store.begin();
        for n in 0..events {
            ctx.outbox().stage(&EVENTS, "test.event", &n).unwrap();
        }
        ctx.commit().unwrap();
        store
    }

    #[tokio::test]
    async fn claims_wider_than_the_publish_window_are_published_a_window_at_a_time() {
        let store = staged(620);
        let publisher = Windows::default();
        let relay = Relay::new(store.clone(), publisher.clone(), &EVENTS)
            .unwrap()
            .options(RelayOptions::default().batch_size(250).publish_window(100));

        let report = relay.drain().await.unwrap();

        assert_eq!((report.claimed, report.published), (620, 620));
        assert_eq!(store.pending_count("events"), 0);
        let windows = publisher.0.lock().unwrap().clone();
        // A first claim of one window, as at every start, then claims of
        // 250, 250 and 20, each cut into windows of 100.
        assert_eq!(windows, [100, 100, 100, 50, 100, 100, 50, 20]);
    }

    #[tokio::test]
    async fn a_pipelined_drain_publishes_every_event_once_in_staging_order() {
        let store = staged(250);
        let publisher = Keep::default();
        let relay = Relay::new(store.clone(), publisher.clone(), &EVENTS)
            .unwrap()
            .options(RelayOptions::default().batch_size(100).drains(1));

        let report = relay.drain().await.unwrap();

        assert_eq!((report.claimed, report.published), (250, 250));
        assert_eq!(store.pending_count("events"), 0);
        let published = publisher.0.lock().unwrap().clone();
        assert_eq!(published, (0..250).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn parallel_drains_publish_every_event_once() {
        let store = staged(2_050);
        let publisher = Keep::default();
        let relay = Relay::new(store.clone(), publisher.clone(), &EVENTS)
            .unwrap()
            .options(RelayOptions::default().batch_size(100).drains(3));

        let report = relay.drain().await.unwrap();

        assert_eq!((report.claimed, report.published), (2_050, 2_050));
        assert_eq!(store.pending_count("events"), 0);
        let mut published = publisher.0.lock().unwrap().clone();
        published.sort_unstable();
        assert_eq!(published, (0..2_050).collect::<Vec<_>>());
    }
}
