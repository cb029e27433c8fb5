//! The consumer's metrics, their names and the values of their `outcome`
//! label, listed once in `docs/src/operations/metrics.md`.

use std::time::Instant;

use tidings_core::telemetry;

/// Deliveries settled, by `outcome`: [`ACKED`], [`DUPLICATE`], [`PARKED`],
/// [`RETRIED`], [`EXPIRED`] or [`SKIPPED`], with `queue` and `consumer`.
pub(crate) const MESSAGES: &str = "tidings_consumer_messages_total";
/// How long handlers ran, in seconds, by `outcome` (`ok` or `error`),
/// with `queue` and `consumer`.
pub(crate) const HANDLER_SECONDS: &str = "tidings_consumer_handler_seconds";
/// Settlements the broker did not take, with `queue` and `consumer`.
pub(crate) const SETTLE_ERRORS: &str = "tidings_consumer_settle_errors_total";

/// Handled and acked.
pub(crate) const ACKED: &str = "acked";
/// Seen before and acked without running the handler.
pub(crate) const DUPLICATE: &str = "duplicate";
/// Dead-lettered.
pub(crate) const PARKED: &str = "parked";
/// Nacked for redelivery.
pub(crate) const RETRIED: &str = "retried";
/// Past its expiry and acked without running the handler (an expired
/// delivery that is parked counts as [`PARKED`]).
pub(crate) const EXPIRED: &str = "expired";
/// Of a type the consumer has no handler for, and acked without running
/// one (an unknown type that is parked counts as [`PARKED`]).
pub(crate) const SKIPPED: &str = "skipped";

/// The consumer's metrics, labelled with its queue and consumer.
#[derive(Debug)]
pub(crate) struct Metrics {
    queue: String,
    consumer: String,
}

impl Metrics {
    pub(crate) fn new(queue: &str, consumer: &str) -> Self {
        Self {
            queue: queue.to_owned(),
            consumer: consumer.to_owned(),
        }
    }

    /// Counts a delivery under `outcome` ([`ACKED`], [`DUPLICATE`],
    /// [`PARKED`] or [`RETRIED`]) and marks the delivery's span failed when
    /// it was not handled.
    pub(crate) fn count(&self, outcome: &'static str) {
        if matches!(outcome, PARKED | RETRIED) {
            telemetry::record_error(&tracing::Span::current(), outcome);
        }
        metrics::counter!(MESSAGES, &self.labels(&[("outcome", outcome)])).increment(1);
    }

    /// Records how long a handler call took, by whether it succeeded.
    pub(crate) fn time_handler(&self, started: Instant, ok: bool) {
        let outcome = if ok { "ok" } else { "error" };
        metrics::histogram!(HANDLER_SECONDS, &self.labels(&[("outcome", outcome)]))
            .record(started.elapsed());
    }

    /// Counts a settlement the broker did not take.
    pub(crate) fn count_settle_error(&self) {
        metrics::counter!(SETTLE_ERRORS, &self.labels(&[])).increment(1);
    }

    /// The queue and consumer labels every metric carries, and `extra`.
    fn labels(&self, extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, String)> {
        let mut labels = vec![
            ("queue", self.queue.clone()),
            ("consumer", self.consumer.clone()),
        ];
        labels.extend(extra.iter().map(|(k, v)| (*k, (*v).to_owned())));
        labels
    }
}
