//! One relay pass: claim a batch, publish it, settle every row in one call.

use std::time::{Instant, SystemTime};

use tracing::Instrument;
use uuid::Uuid;

use super::RelayOptions;
use super::lane::Lane;
use super::width::ClaimWidth;
use crate::port::error_chain;
use crate::telemetry;
use crate::{
    ClaimCursor, ClaimRequest, ClaimedBatch, Envelope, OutboxRecord, OutboxStore, Outcome,
    PublishBatch, PublishError, Publisher, Queued, Route, Settlement, StoreError,
};

/// What one pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PassReport {
    /// Rows claimed.
    pub claimed: usize,
    /// Rows the broker accepted and the store marked published.
    pub published: usize,
    /// Rows rescheduled after a transient failure.
    pub rescheduled: usize,
    /// Rows failed for good (poison, max attempts, crash loop).
    pub failed: usize,
    /// Rows whose lease was lost before settling; another relay owns them.
    pub lease_lost: usize,
}

impl PassReport {
    /// Adds another pass's counts to this one.
    pub fn add(&mut self, other: PassReport) {
        self.claimed += other.claimed;
        self.published += other.published;
        self.rescheduled += other.rescheduled;
        self.failed += other.failed;
        self.lease_lost += other.lease_lost;
    }
}

/// Claims a batch, publishes it and settles it; returns what it did and
/// the row limit it claimed with.
pub(super) async fn run_pass<S: OutboxStore, P: Publisher>(
    store: &S,
    publisher: &P,
    lane: &Lane,
    config: &RelayOptions,
    width: &ClaimWidth,
) -> Result<(PassReport, usize), StoreError> {
    async move {
        let (mut batch, limit) = claim(store, lane, config, width, None).await?;
        let records = batch.take_records();
        let claimed = records.len();
        if claimed == 0 {
            return Ok((PassReport::default(), limit));
        }
        let settlements = publish(publisher, lane, config, records, None).await;
        let mut report = settle(batch, settlements, lane).await?;
        report.claimed = claimed;
        Ok((report, limit))
    }
    .instrument(pass_span(&lane.route))
    .await
}

/// The span of a pass (or of a pipelined drain).
pub(super) fn pass_span(route: &Route) -> tracing::Span {
    tracing::debug_span!(
        "relay.pass",
        messaging.destination.name = route.destination.as_deref().unwrap_or_default(),
        outbox.route = %route.name
    )
}

/// Claims a batch under a fresh lease, as wide as `width` says, past
/// `after` where given, and returns it with the row limit it was claimed
/// with.
pub(super) async fn claim<S: OutboxStore>(
    store: &S,
    lane: &Lane,
    config: &RelayOptions,
    width: &ClaimWidth,
    after: Option<ClaimCursor>,
) -> Result<(S::Batch, usize), StoreError> {
    let limit = width.limit(config);
    let request = ClaimRequest {
        route: &lane.route,
        limit,
        lease: config.lease,
        after,
    };
    let started = Instant::now();
    let span = tracing::info_span!(
        "claim",
        outbox.route = %lane.route.name,
        limit,
        claimed = tracing::field::Empty,
    );
    let batch = store.claim(request).instrument(span.clone()).await?;
    span.record("claimed", batch.records().len());
    metrics::histogram!("tidings_relay_claim_seconds", lane.labels().iter())
        .record(started.elapsed());
    width.observe(batch.records());
    Ok((batch, limit))
}

/// Settles a published batch; the report counts everything but `claimed`.
pub(super) async fn settle<B: ClaimedBatch>(
    batch: B,
    settlements: Vec<Settlement>,
    lane: &Lane,
) -> Result<PassReport, StoreError> {
    let span = tracing::info_span!(
        "settle",
        outbox.route = %lane.route.name,
        outbox.lease = %batch.lease().0,
        settlements = settlements.len(),
    );
    let settled = batch.settle(settlements).instrument(span).await?;
    count(lane, &settled);
    if !settled.lost.is_empty() {
        tracing::warn!(
            lost = settled.lost.len(),
            "lease lost before settling; another relay owns those rows"
        );
    }
    Ok(PassReport {
        claimed: 0,
        published: settled.published,
        rescheduled: settled.rescheduled,
        failed: settled.failed,
        lease_lost: settled.lost.len(),
    })
}

fn count(lane: &Lane, settled: &crate::SettleReport) {
    let counts = [
        ("tidings_relay_published_total", settled.published),
        ("tidings_relay_rescheduled_total", settled.rescheduled),
        ("tidings_relay_failed_total", settled.failed),
        ("tidings_relay_lease_lost_total", settled.lost.len()),
    ];
    for (name, n) in counts {
        if n > 0 {
            metrics::counter!(name, lane.labels().iter()).increment(n as u64);
        }
    }
}

/// Publishes what may be published and decides every row's outcome. The
/// records are taken, not borrowed, so each envelope goes to the publisher
/// as it was claimed, without a copy. `queued`, where given, is dropped
/// once the last window's messages are queued on their way to the broker
/// (see [`Publisher::send`]).
pub(super) async fn publish<P: Publisher>(
    publisher: &P,
    lane: &Lane,
    config: &RelayOptions,
    records: Vec<OutboxRecord>,
    mut queued: Option<Queued>,
) -> Vec<Settlement> {
    let mut settlements = Vec::with_capacity(records.len());
    let mut envelopes: Vec<Envelope> = Vec::with_capacity(records.len());
    let mut attempts: Vec<u32> = Vec::with_capacity(records.len());
    for record in records {
        match refuse(&record, config, publisher.judges_expiry()) {
            Some(reason) => {
                let envelope = &record.envelope;
                tracing::warn!(messaging.message.id = %envelope.event_id, %reason, "failing row without publishing");
                let failed = Outcome::Failed { reason };
                let attempts = record.attempts_started;
                settlements.push(Settlement {
                    event_id: envelope.event_id,
                    outcome: lane.give_up_first(envelope, attempts, failed).await,
                });
            }
            None => {
                attempts.push(record.attempts_started);
                envelopes.push(lane.stamp(record.envelope));
            }
        }
    }
    let width = config.publish_window.max(1);
    let windows = envelopes.chunks(width).len();
    let pairs = envelopes.chunks(width).zip(attempts.chunks(width));
    for (n, (window, attempts)) in pairs.enumerate() {
        // Windows go one after another, so the batch is queued once its
        // last window is: only that one holds the caller's token.
        let token = match n + 1 == windows {
            true => queued.take(),
            false => None,
        };
        let token = token.unwrap_or_else(|| Queued::new().0);
        let mut results = send(publisher, lane, window, token).await.into_iter();
        for (envelope, &attempts) in window.iter().zip(attempts) {
            let result = results.next().unwrap_or_else(|| {
                Err(PublishError::Refused {
                    reason: "publisher returned no result".into(),
                })
            });
            let outcome = decide(envelope.event_id, attempts, result, &lane.route);
            settlements.push(Settlement {
                event_id: envelope.event_id,
                outcome: lane.give_up_first(envelope, attempts, outcome).await,
            });
        }
    }
    settlements
}

/// Publishes one window under its `send` span, which fails with the first
/// error's type when any message fails.
async fn send<P: Publisher>(
    publisher: &P,
    lane: &Lane,
    envelopes: &[Envelope],
    queued: Queued,
) -> Vec<Result<(), PublishError>> {
    let system = publisher.messaging_system();
    let destination = lane.route.destination.as_deref().unwrap_or_default();
    let span = telemetry::send_span(system, destination, envelopes);
    let started = Instant::now();
    let results = publisher
        .send(PublishBatch::queued(envelopes, queued))
        .instrument(span.clone())
        .await;
    let elapsed = started.elapsed();
    metrics::histogram!("tidings_relay_publish_seconds", lane.labels().iter()).record(elapsed);
    if let Some(error) = results.iter().find_map(|r| r.as_ref().err()) {
        telemetry::record_error(&span, error.error_type());
    }
    results
}

/// Rows that must not be published at all: crash loops, events without a
/// destination, and events whose expiry has come (a requeued one too: an
/// expiry is the producer's word that the event is worthless after it),
/// unless the publisher judges expiry itself.
fn refuse(record: &OutboxRecord, config: &RelayOptions, judges_expiry: bool) -> Option<String> {
    if record.crashes() >= config.max_crashes {
        return Some(format!(
            "crash loop: claimed {} times, {} of them never finished",
            record.attempts_started,
            record.crashes()
        ));
    }
    if record.envelope.destination.is_empty() {
        return Some("poison: the event has no destination".to_owned());
    }
    if let Some(at) = record.envelope.expires_at.filter(|_| !judges_expiry) {
        if record.envelope.is_expired(SystemTime::now()) {
            return Some(expired_reason(at));
        }
    }
    None
}

/// The reason an expired event is failed with, naming its expiry.
fn expired_reason(at: SystemTime) -> String {
    format!("expired at {}", humantime::format_rfc3339_micros(at))
}

/// The outcome of one publish of event `id`, on its `attempts`th claim.
fn decide(id: Uuid, attempts: u32, result: Result<(), PublishError>, route: &Route) -> Outcome {
    let error = match result {
        Ok(()) => {
            // `trace`, not `debug`: one event per message would pile up on
            // the pass's span, which lasts a whole drain, in every trace
            // exported at `debug`.
            tracing::trace!(messaging.message.id = %id, "published");
            return Outcome::Published;
        }
        Err(error) => error,
    };
    let chain = error_chain(&error);
    if !error.is_transient() {
        tracing::warn!(messaging.message.id = %id, error = %chain, "poison: failing row");
        return Outcome::Failed {
            reason: format!("poison: {chain}"),
        };
    }
    if attempts >= route.retry.max_attempts {
        tracing::warn!(messaging.message.id = %id, attempts, error = %chain, "giving up");
        return Outcome::Failed {
            reason: format!("gave up after {attempts} attempts: {chain}"),
        };
    }
    let delay = route.retry.get_backoff().delay(attempts);
    tracing::info!(messaging.message.id = %id, attempts, retry_in = ?delay, error = %chain, "publish failed; rescheduling");
    Outcome::Retry {
        delay,
        error: chain,
    }
}
