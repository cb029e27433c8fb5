//! One pipelined drain's batches in flight: the claim under way, a claimed
//! batch waiting its turn to be published, the batches being published
//! and the ones being settled, all driven from one poll loop.

use std::future::poll_fn;
use std::task::{Context, Poll};

use futures::FutureExt;
use futures::future::BoxFuture;
use futures::stream::{FuturesUnordered, StreamExt};

use super::{HELD, PUBLISHING, UNBOUNDED_EVERY};
use crate::relay::lane::Lane;
use crate::relay::pass::{claim, publish, settle};
use crate::relay::width::ClaimWidth;
use crate::relay::{PassReport, RelayOptions};
use crate::{
    ClaimCursor, ClaimedBatch, OutboxRecord, OutboxStore, Publisher, Queued, QueuedWait,
    Settlement, StoreError,
};

type Claim<'a, B> = BoxFuture<'a, Result<(B, usize), StoreError>>;

/// A drain's batches in flight and what it has done so far.
pub(super) struct Flight<'a, S: OutboxStore, P> {
    store: &'a S,
    publisher: &'a P,
    lane: &'a Lane,
    config: &'a RelayOptions,
    width: &'a ClaimWidth,
    claiming: Option<Claim<'a, S::Batch>>,
    /// A claimed batch and its records, not yet handed to the publisher.
    claimed: Option<(S::Batch, Vec<OutboxRecord>)>,
    /// Resolves once the batch published last is queued ahead of anything
    /// published after it.
    queued: Option<QueuedWait>,
    publishing: FuturesUnordered<BoxFuture<'a, (S::Batch, Vec<Settlement>)>>,
    settling: FuturesUnordered<BoxFuture<'a, Result<PassReport, StoreError>>>,
    /// Whether there may be more to claim: the last claim came back full,
    /// or short past a cursor, which may have left rows behind it.
    more: bool,
    /// Where the next claim starts, or `None` for the route's oldest row.
    after: Option<ClaimCursor>,
    /// Claims in a row that started past a cursor, the one under way
    /// included.
    bounded: usize,
    total: PassReport,
    error: Option<StoreError>,
}

impl<'a, S: OutboxStore, P: Publisher> Flight<'a, S, P> {
    /// A drain that starts with `first` when handed a claimed batch, with
    /// a claim of its own otherwise.
    pub(super) fn new(
        store: &'a S,
        publisher: &'a P,
        lane: &'a Lane,
        config: &'a RelayOptions,
        width: &'a ClaimWidth,
        first: Option<(S::Batch, usize)>,
    ) -> Self {
        let mut flight = Self {
            store,
            publisher,
            lane,
            config,
            width,
            claiming: None,
            claimed: None,
            queued: None,
            publishing: FuturesUnordered::new(),
            settling: FuturesUnordered::new(),
            more: true,
            after: None,
            bounded: 0,
            total: PassReport::default(),
            error: None,
        };
        match first {
            Some(first) => flight.claimed(Ok(first)),
            None => flight.claim(),
        }
        flight
    }

    /// Claims, publishes and settles batches until a claim comes back short
    /// of a full batch and everything claimed is settled; returns the sum,
    /// or the first error.
    pub(super) async fn drain(mut self) -> Result<PassReport, StoreError> {
        poll_fn(|cx| self.poll(cx)).await;
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.total),
        }
    }

    /// Moves every batch on as far as it goes; ready once nothing is held.
    ///
    /// Claims follow one another, so the next one starts as soon as it may,
    /// before the batch just claimed is published: its first poll sends its
    /// statement, and the store works on it while the relay publishes.
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        loop {
            let mut moved = false;
            if let Some(claiming) = self.claiming.as_mut() {
                if let Poll::Ready(claimed) = claiming.as_mut().poll(cx) {
                    self.claiming = None;
                    self.claimed(claimed);
                    moved = true;
                }
            }
            while let Poll::Ready(Some(settled)) = self.settling.poll_next_unpin(cx) {
                self.record(settled);
                moved = true;
            }
            if let Some(queued) = self.queued.as_mut() {
                if queued.poll_unpin(cx).is_ready() {
                    self.queued = None;
                }
            }
            if self.queued.is_none() && self.publishing.len() < self.publishing_at_once() {
                if let Some(claimed) = self.claimed.take() {
                    self.publish(claimed);
                    moved = true;
                }
            }
            if self.may_claim() {
                self.claim();
                continue;
            }
            while let Poll::Ready(Some((batch, settlements))) = self.publishing.poll_next_unpin(cx)
            {
                let lane = self.lane;
                self.settling
                    .push(Box::pin(settle(batch, settlements, lane)));
                moved = true;
            }
            if self.claiming.is_none() && self.claimed.is_none() && self.held() == 0 {
                return Poll::Ready(());
            }
            if !moved {
                return Poll::Pending;
            }
        }
    }

    /// How many batches may be published at once: one while claims are
    /// narrow, so a crash fails at most a window's rows.
    fn publishing_at_once(&self) -> usize {
        match self.width.is_wide() {
            true => PUBLISHING,
            false => 1,
        }
    }

    /// Batches held past their claim: claimed, publishing or settling.
    fn held(&self) -> usize {
        usize::from(self.claimed.is_some()) + self.publishing.len() + self.settling.len()
    }

    /// Whether to claim the next batch now.
    fn may_claim(&self) -> bool {
        self.more
            && self.error.is_none()
            && self.claiming.is_none()
            && self.claimed.is_none()
            && self.held() < HELD
    }

    fn claim(&mut self) {
        let (store, lane, config, width) = (self.store, self.lane, self.config, self.width);
        let after = self.after;
        self.bounded = match after {
            Some(_) => self.bounded + 1,
            None => 0,
        };
        self.claiming = Some(Box::pin(claim(store, lane, config, width, after)));
    }

    /// Takes a claim's outcome: a batch to publish, unless empty, or the
    /// drain's error.
    fn claimed(&mut self, claimed: Result<(S::Batch, usize), StoreError>) {
        match claimed {
            Ok((mut batch, limit)) => {
                let cursor = batch.cursor();
                let records = batch.take_records();
                let full = records.len() >= limit;
                self.more = full || self.bounded > 0;
                self.after = cursor.filter(|_| self.goes_on_past(full));
                if !records.is_empty() {
                    self.total.claimed += records.len();
                    self.claimed = Some((batch, records));
                }
            }
            Err(e) => {
                self.more = false;
                self.error.get_or_insert(e);
            }
        }
    }

    /// Whether the next claim starts past the last one's cursor: while
    /// claims come back full and wide, but for one claim in
    /// [`UNBOUNDED_EVERY`], which starts from the oldest row and so takes
    /// rows the cursors left behind. Narrow claims always start there, so
    /// the rows of a crashed claim come first.
    fn goes_on_past(&self, full: bool) -> bool {
        full && self.width.is_wide() && self.bounded + 1 < UNBOUNDED_EVERY
    }

    fn publish(&mut self, (batch, records): (S::Batch, Vec<OutboxRecord>)) {
        let (queued, wait) = Queued::new();
        self.queued = Some(wait);
        let (publisher, lane, config) = (self.publisher, self.lane, self.config);
        self.publishing.push(Box::pin(async move {
            let settlements = publish(publisher, lane, config, records, Some(queued)).await;
            (batch, settlements)
        }));
    }

    /// Adds a settle's counts to the total, or keeps its error (the first
    /// wins).
    fn record(&mut self, settled: Result<PassReport, StoreError>) {
        match settled {
            Ok(report) => self.total.add(report),
            Err(e) => {
                self.error.get_or_insert(e);
            }
        }
    }
}
