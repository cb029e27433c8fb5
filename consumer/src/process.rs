//! What happens to one delivery: the runner's layers, outermost first, then
//! the settlement.

use std::sync::Arc;
use std::time::Instant;

use tidings_core::give_up::GiveUpHook;
use tidings_core::port::error_chain;
use tidings_core::telemetry::{self, Settle};
use tidings_core::{
    Acker, Attempts, CausalContext, Cause, Delivery, Envelope, HybridClock, InboxMark, InboxStore,
    Message, Redelivery,
};
use tidings_inbox::Inbox;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;
use tracing::Instrument;

use crate::handler::{HandlerRequest, TxHandle};
use crate::isolation::Isolation;
use crate::metric::{self, Metrics};
use crate::parts::{Parts, Tx};
use crate::report::{Count, Counters};
use crate::typed::Types;
use crate::{ConsumerOptions, HandlerError, KeyOrder, QueueRef};

/// How one delivery ends.
#[derive(Debug)]
pub(crate) enum Verdict {
    /// Handled and committed: ack.
    Done,
    /// Seen before: ack without running the handler.
    Duplicate,
    /// Skipped, with its `outcome` label and the reason: ack without
    /// running the handler (past its expiry, or of an unknown type).
    Skip(&'static str, String),
    /// Dead-letter with the reason.
    Park(String),
    /// Nack for redelivery.
    Retry(String),
    /// Shutdown came while the delivery waited to be retried: leave it
    /// unsettled for the broker to redeliver.
    Abandon,
}

impl Verdict {
    /// The `outcome` label the delivery is counted under; none for one
    /// left unsettled.
    fn outcome(&self) -> Option<&'static str> {
        match self {
            Self::Done => Some(metric::ACKED),
            Self::Duplicate => Some(metric::DUPLICATE),
            Self::Skip(outcome, _) => Some(outcome),
            Self::Park(_) => Some(metric::PARKED),
            Self::Retry(_) => Some(metric::RETRIED),
            Self::Abandon => None,
        }
    }
}

/// Everything a delivery needs, shared by the consumer's tasks.
pub(crate) struct Pipeline<P: Parts> {
    pub(crate) queue: QueueRef<P::Payload, P::Codec>,
    pub(crate) handler: P::Handler,
    pub(crate) inbox: Inbox<P::Inbox>,
    pub(crate) options: ConsumerOptions,
    /// Each event type's settings, with per-type handlers.
    pub(crate) types: Option<Types>,
    pub(crate) hlc: Option<HybridClock>,
    pub(crate) counters: Arc<Counters>,
    pub(crate) metrics: Metrics,
    /// Shared turns for handler runs, exclusive ones for suspects.
    pub(crate) isolation: Isolation,
    /// The broker's `messaging.system`, from the source.
    pub(crate) system: &'static str,
    /// Fires on shutdown; stops retries waiting for their turn.
    pub(crate) cancel: CancellationToken,
    /// Runs before a delivery is parked, if set.
    pub(crate) give_up: Option<GiveUpHook>,
}

impl<P: Parts> Pipeline<P> {
    /// Runs one delivery through the layers and settles it.
    pub(crate) async fn process<A: Acker>(&self, delivery: Delivery<A>) {
        let (envelope, count, acker) = delivery.into_parts();
        // Layer 1, the trace span: one per delivery, after the
        // OpenTelemetry messaging conventions, a child of the message's
        // creation context where it carries one.
        let span = telemetry::process_span(
            self.system,
            self.queue.name(),
            self.inbox.consumer(),
            &[&envelope],
            count,
        );
        async move {
            self.observe_clock(&envelope);
            // Then the expiry and, with per-type handlers, the type: a
            // message past its expiry or of a type with no handler never
            // reaches decode or a handler, and is parked or skipped as the
            // settings say.
            let verdict = match self.expired(&envelope) {
                Some(verdict) => verdict,
                None => match self.unknown_type(&envelope) {
                    Some(verdict) => verdict,
                    None => self.judge_unless_given_up(&envelope, count).await,
                },
            };
            let verdict = self.give_up_first(verdict, &envelope, count).await;
            self.settle(verdict, acker).await;
        }
        .instrument(span)
        .await
    }

    /// Moves the hybrid clock past the delivery's stamp, so reactions the
    /// handler stages sort after it.
    pub(crate) fn observe_clock(&self, envelope: &Envelope) {
        if let (Some(clock), Some(stamp)) = (&self.hlc, envelope.hlc) {
            if let Err(e) = clock.observe(stamp) {
                tracing::warn!(error = %e, "ignoring a hybrid clock stamp from too far in the future");
            }
        }
    }

    pub(crate) async fn judge(&self, envelope: &Envelope, count: Option<u32>) -> Verdict {
        // Layer 2, decode: a payload the codec refuses never reaches the
        // handler.
        let payload = match self.queue.decode(&envelope.payload) {
            Ok(payload) => payload,
            Err(e) => return Verdict::Park(format!("undecodable payload: {}", error_chain(&e))),
        };
        // Counted before the handler's transaction opens, in a write of its
        // own, so a crash of this process leaves the count behind; the turn
        // is held until the attempts end.
        let (counted, turn) = match self.start_attempt(envelope, count).await {
            Ok(started) => started,
            Err(reason) => return Verdict::Retry(reason),
        };
        let verdict = self.attempts(envelope, count, counted, payload).await;
        if matches!(verdict, Verdict::Retry(_)) {
            self.finish_attempt(envelope, counted).await;
        }
        drop(turn);
        verdict
    }

    /// The in-process attempts on one delivery, with the usual retries.
    async fn attempts(
        &self,
        envelope: &Envelope,
        count: Option<u32>,
        counted: Counted,
        payload: P::Payload,
    ) -> Verdict {
        let options = self.options_for(envelope);
        let mut decoded = Some(payload);
        let mut attempt = 1;
        loop {
            // The handler consumes the payload; a retry decodes it afresh.
            let payload = match decoded.take() {
                Some(payload) => payload,
                None => match self.queue.decode(&envelope.payload) {
                    Ok(payload) => payload,
                    Err(e) => {
                        return Verdict::Park(format!("undecodable payload: {}", error_chain(&e)));
                    }
                },
            };
            let error = match self.attempt(envelope, count, counted, payload).await {
                Ok(verdict) => return verdict,
                Err(error) => error,
            };
            if !self.is_transient(&error) {
                return Verdict::Park(format!("handler failed permanently: {error}"));
            }
            // Under a strict key order a delivery holding its key is never
            // nacked past: it is retried here until it succeeds or its
            // strict attempts run out, and then parked.
            let holds_key =
                options.key_order == KeyOrder::Strict && envelope.ordering_key.is_some();
            if holds_key && attempt >= options.strict_attempts {
                return Verdict::Park(format!(
                    "handler failed {attempt} times holding its ordering key: {error}"
                ));
            }
            if !holds_key && attempt >= options.attempts {
                return Verdict::Retry(format!("handler failed {attempt} times: {error}"));
            }
            let delay = options.retry_backoff.delay(attempt);
            tracing::info!(attempt, retry_in = ?delay, error = %error, "handler failed; retrying");
            tokio::select! {
                () = self.cancel.cancelled() => return Verdict::Abandon,
                () = tokio::time::sleep(delay) => {}
            }
            attempt += 1;
        }
    }

    /// One attempt in a fresh transaction.
    async fn attempt(
        &self,
        envelope: &Envelope,
        count: Option<u32>,
        counted: Counted,
        payload: P::Payload,
    ) -> Result<Verdict, HandlerError> {
        // Layer 3, inbox dedupe: the mark goes into the transaction the
        // handler writes through.
        let isolation = self.options_for(envelope).isolation;
        let mut tx = match self.inbox.begin_at(envelope.event_id, isolation).await? {
            InboxMark::Duplicate => return Ok(Verdict::Duplicate),
            InboxMark::Fresh(tx) => tx,
        };
        // Layer 4, poison check: past max_deliveries the handler is not run
        // again (see the attempts module for what counts).
        if let Some(reason) = self.exhausted(count, counted) {
            self.rollback(tx).await;
            return Ok(Verdict::Park(reason));
        }
        if let Err(e) = self.clear_attempts(&mut tx, envelope, counted).await {
            self.rollback(tx).await;
            return Err(e.into());
        }
        // Layer 5, the user's layers and the handler, bounded by the
        // handler timeout.
        let tx = self.handle_in(tx, envelope, count, payload).await?;
        self.inbox.commit(tx).await?;
        Ok(Verdict::Done)
    }

    /// Runs the handler on one delivery's `payload` in `tx`, which holds
    /// its inbox mark: the transaction back when the handler succeeded, or
    /// its error with the transaction rolled back. Both the one-at-a-time
    /// and the batched paths go through here.
    pub(crate) async fn handle_in(
        &self,
        tx: Tx<P>,
        envelope: &Envelope,
        count: Option<u32>,
        payload: P::Payload,
    ) -> Result<Tx<P>, HandlerError> {
        let message = Message {
            payload,
            envelope: envelope.clone(),
            delivery_count: count,
        };
        // What the handler stages is caused by this message, and only
        // what it stages while handling it: a batch's next message
        // brings its own cause.
        let mut tx = tx;
        tx.set_cause(Some(Cause::of(envelope)));
        let handle = TxHandle::new(tx);
        let timeout = self.options_for(envelope).handler_timeout;
        let outcome = self.call_handler(message, handle.clone(), timeout).await;
        let Some(mut tx) = handle.into_inner() else {
            return Err(HandlerError::transient(
                "handler kept its transaction handle past its return",
            ));
        };
        tx.set_cause(None);
        match outcome {
            Ok(()) => Ok(tx),
            Err(error) => {
                self.rollback(tx).await;
                Err(error)
            }
        }
    }

    /// Whether a handler's failure may go away, the inbox store reading
    /// those the handler did not classify where the options say so.
    fn is_transient(&self, error: &HandlerError) -> bool {
        let store = self.inbox.store();
        let classify = self.options.classify_errors;
        error.is_transient_by(|source| classify && store.is_permanent(source))
    }

    pub(crate) async fn call_handler(
        &self,
        message: Message<P::Payload>,
        tx: TxHandle<Tx<P>>,
        timeout: std::time::Duration,
    ) -> Result<(), HandlerError> {
        let handler = self.handler.clone();
        let call = handler.oneshot(HandlerRequest { message, tx });
        let started = Instant::now();
        let result = match tokio::time::timeout(timeout, call).await {
            Ok(result) => result,
            Err(_) => Err(HandlerError::transient(format!(
                "handler timed out after {timeout:?}"
            ))),
        };
        self.metrics.time_handler(started, result.is_ok());
        result
    }

    pub(crate) async fn rollback(&self, tx: Tx<P>) {
        if let Err(e) = self.inbox.rollback(tx).await {
            tracing::warn!(error = %error_chain(&e), "rollback failed");
        }
    }

    /// Acks, nacks or dead-letters. A settlement the broker refuses is
    /// logged; the broker redelivers and the inbox dedupes.
    pub(crate) async fn settle<A: Acker>(&self, verdict: Verdict, acker: A) {
        let counters = &self.counters;
        if let Some(outcome) = verdict.outcome() {
            self.metrics.count(outcome);
        }
        let system = self.system;
        let queue = self.queue.name();
        let settled = match verdict {
            Verdict::Done => {
                tracing::debug!("handled");
                counters.bump(Count::Processed);
                let span = telemetry::settle_span(system, queue, Settle::Ack);
                acker.ack().instrument(span).await
            }
            Verdict::Duplicate => {
                tracing::debug!("duplicate skipped");
                counters.bump(Count::Duplicates);
                let span = telemetry::settle_span(system, queue, Settle::Ack);
                acker.ack().instrument(span).await
            }
            Verdict::Skip(_, reason) => {
                tracing::info!(%reason, "skipping without running the handler");
                let span = telemetry::settle_span(system, queue, Settle::Ack);
                acker.ack().instrument(span).await
            }
            Verdict::Park(reason) => {
                tracing::warn!(%reason, "dead-lettering");
                counters.bump(Count::Parked);
                let span = telemetry::settle_span(system, queue, Settle::DeadLetter);
                acker.dead_letter(reason).instrument(span).await
            }
            Verdict::Retry(reason) => {
                tracing::info!(%reason, "nacking for redelivery");
                counters.bump(Count::Failed);
                let redelivery = self
                    .options
                    .redelivery_delay
                    .map_or(Redelivery::Now, Redelivery::After);
                let span = telemetry::settle_span(system, queue, Settle::Nack);
                acker.nack(redelivery).instrument(span).await
            }
            Verdict::Abandon => {
                tracing::info!("shutting down; leaving the delivery unsettled for redelivery");
                drop(acker);
                Ok(())
            }
        };
        if let Err(e) = settled {
            counters.bump(Count::SettleErrors);
            self.metrics.count_settle_error();
            tracing::error!(error = %error_chain(&e), "settling failed; the broker will redeliver");
        }
    }
}

/// How the attempts on one delivery are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Counted {
    /// Nothing counts: no `max_deliveries`.
    Off,
    /// A first delivery: nothing counted up front.
    First,
    /// Counted by the inbox, this attempt included.
    Inbox(Attempts),
    /// The inbox counts nothing; the broker's count decides.
    Broker,
}
