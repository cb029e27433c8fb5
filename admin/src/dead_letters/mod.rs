//! Messages a consumer parked in a dead-letter queue: looked at without
//! consuming them, replayed to the queue they came from, or purged.
//!
//! A replay publishes a copy to the original queue, waits for the broker to
//! take it, and only then removes the dead letter. A replay that dies
//! halfway leaves every dead letter not yet removed where it was, so it can
//! be run again; a message copied but not yet removed is copied a second
//! time, and the consumer's inbox handles it once (the event id is kept).
//!
//! Looking is free on every broker: listing, showing, filtering and dry
//! runs leave each dead letter as it was, its parking record included
//! (how each reader manages that is told in its module). The delivery
//! count shown is the one the parking acker recorded.
//!
//! The copy starts with a fresh delivery count: the broker's dead-letter
//! records and tidings' delivery counting headers (the parking record
//! among them) are dropped. The reason
//! the consumer parked it moves to [`REPLAYED_REASON_HEADER`], which the
//! handler can read.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

#[cfg(feature = "rabbitmq")]
mod amqp_message;
#[cfg(feature = "rabbitmq")]
mod amqp_moves;
#[cfg(feature = "kafka")]
mod kafka;
#[cfg(feature = "kafka")]
mod kafka_log;
mod parking;
#[cfg(feature = "rabbitmq")]
mod rabbitmq;
#[cfg(any(feature = "rabbitmq", feature = "sqs", feature = "kafka"))]
mod scan;

#[cfg(feature = "sqs")]
mod sqs;

#[cfg(feature = "kafka")]
pub use kafka::KafkaDeadLetters;
#[cfg(feature = "kafka")]
pub use kafka_log::{RESOLUTION_HEADER, RESOLVED_HEADER};
#[cfg(feature = "rabbitmq")]
pub use rabbitmq::RabbitDeadLetters;
#[cfg(any(feature = "rabbitmq", feature = "sqs", feature = "kafka"))]
pub use scan::DeadLetterQueues;
#[cfg(feature = "sqs")]
pub use sqs::SqsDeadLetters;

pub use tidings_core::REPLAYED_REASON_HEADER;

/// A parked message as an operator sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeadLetter {
    /// The message id (the event id for messages tidings published).
    pub id: String,
    /// The event type, where the message has one.
    pub event_type: Option<String>,
    /// Why the consumer parked it.
    pub reason: Option<String>,
    /// How long ago it was sent, in seconds, where the broker tells.
    pub age_secs: Option<f64>,
    /// Its headers (or message attributes) that have a text value.
    pub headers: BTreeMap<String, String>,
    /// The body, as UTF-8 with invalid bytes replaced.
    pub payload: String,
    /// The body's size in bytes.
    pub size: usize,
    /// How many times the consumer was handed it before parking it, as the
    /// parking acker recorded (never a count of reads by this tool).
    pub deliveries: Option<u32>,
    /// How long ago its first delivery failed, in seconds, where recorded.
    pub first_failure_age_secs: Option<f64>,
    /// How long ago it was parked, in seconds, where recorded.
    pub parked_age_secs: Option<f64>,
}

impl DeadLetter {
    #[cfg(any(feature = "rabbitmq", feature = "sqs", feature = "kafka", test))]
    pub(crate) fn new(id: String, headers: BTreeMap<String, String>, body: &[u8]) -> Self {
        Self {
            id,
            event_type: None,
            reason: headers
                .get(tidings_core::DEAD_LETTER_REASON_HEADER)
                .cloned(),
            age_secs: None,
            headers,
            payload: String::from_utf8_lossy(body).into_owned(),
            size: body.len(),
            deliveries: None,
            first_failure_age_secs: None,
            parked_age_secs: None,
        }
    }
}

/// Which dead letters an operation takes. Every filter set must match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetterFilter {
    /// Only messages of this event type.
    pub event_type: Option<String>,
    /// Only messages sent at least this long ago.
    pub older_than: Option<Duration>,
    /// Only messages whose parking reason contains this text.
    pub reason: Option<String>,
    /// Only these message ids.
    pub ids: Option<Vec<String>>,
    /// At most this many messages.
    pub limit: usize,
}

impl DeadLetterFilter {
    /// Messages taken when no limit is given.
    pub const DEFAULT_LIMIT: usize = 100;

    /// Whether `letter` passes every filter.
    pub fn matches(&self, letter: &DeadLetter) -> bool {
        let age = letter.age_secs.map(Duration::from_secs_f64);
        self.event_type
            .as_ref()
            .is_none_or(|t| letter.event_type.as_ref() == Some(t))
            && self
                .older_than
                .is_none_or(|min| age.is_some_and(|age| age >= min))
            && self.reason.as_ref().is_none_or(|text| {
                letter
                    .reason
                    .as_ref()
                    .is_some_and(|r| r.contains(text.as_str()))
            })
            && self.ids.as_ref().is_none_or(|ids| ids.contains(&letter.id))
    }
}

impl Default for DeadLetterFilter {
    fn default() -> Self {
        Self {
            event_type: None,
            older_than: None,
            reason: None,
            ids: None,
            limit: Self::DEFAULT_LIMIT,
        }
    }
}

/// How a replay or purge runs.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ReplayOptions {
    pub(crate) rate: Option<f64>,
    pub(crate) dry_run: bool,
}

impl ReplayOptions {
    /// Defaults: as fast as the broker takes them, for real.
    pub fn new() -> Self {
        Self::default()
    }

    /// At most this many messages a second; default: no limit.
    pub fn rate(mut self, per_second: f64) -> Self {
        self.rate = (per_second > 0.0).then_some(per_second);
        self
    }

    /// Only report what would happen; default: false.
    pub fn dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }

    /// The rate limit, if any.
    pub fn get_rate(&self) -> Option<f64> {
        self.rate
    }

    /// Whether nothing is changed.
    pub fn get_dry_run(&self) -> bool {
        self.dry_run
    }

    /// The pause between two messages.
    #[cfg(any(feature = "rabbitmq", feature = "sqs", feature = "kafka"))]
    pub(crate) fn pause(&self) -> Option<Duration> {
        self.rate.map(|r| Duration::from_secs_f64(1.0 / r))
    }
}

/// What a replay or purge did or, dry, would do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeadLetterReport {
    /// The dead-letter queue.
    pub queue: String,
    /// Messages matching the filter.
    pub matched: usize,
    /// The ids of the messages matching the filter, in queue order: what a
    /// dry run would take, or what was taken.
    pub ids: Vec<String>,
    /// Messages replayed or purged (0 on a dry run).
    pub done: usize,
    /// Whether nothing was changed.
    pub dry_run: bool,
}

/// A dead-letter queue's depth.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QueueDepth {
    /// The dead-letter queue.
    pub queue: String,
    /// Messages in it.
    pub messages: u64,
}

/// The headers a replayed copy carries: `headers` without the broker's
/// and tidings' delivery bookkeeping, the parking reason under
/// [`REPLAYED_REASON_HEADER`].
#[cfg(any(feature = "rabbitmq", feature = "kafka", test))]
pub(crate) fn is_bookkeeping(name: &str) -> bool {
    name == "x-death"
        || name.starts_with("x-first-death-")
        || name.starts_with("x-last-death-")
        || name == "x-delivery-count"
        || name.eq_ignore_ascii_case(tidings_core::DEAD_LETTER_REASON_HEADER)
        || (name.starts_with("x-tidings-") && name != REPLAYED_REASON_HEADER)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn letter() -> DeadLetter {
        let mut headers = BTreeMap::new();
        headers.insert("x-dead-letter-reason".into(), "handler: bad total".into());
        let mut letter = DeadLetter::new("e-1".into(), headers, b"{}");
        letter.event_type = Some("order.placed".into());
        letter.age_secs = Some(120.0);
        letter
    }

    #[test]
    fn every_filter_set_must_match() {
        let letter = letter();
        assert!(DeadLetterFilter::default().matches(&letter));
        let by = |f: DeadLetterFilter| f.matches(&letter);
        assert!(by(DeadLetterFilter {
            reason: Some("bad".into()),
            ..Default::default()
        }));
        assert!(!by(DeadLetterFilter {
            reason: Some("timeout".into()),
            ..Default::default()
        }));
        assert!(by(DeadLetterFilter {
            older_than: Some(Duration::from_secs(60)),
            ..Default::default()
        }));
        assert!(!by(DeadLetterFilter {
            older_than: Some(Duration::from_secs(600)),
            ..Default::default()
        }));
        assert!(!by(DeadLetterFilter {
            event_type: Some("order.placed".into()),
            ids: Some(vec!["e-2".into()]),
            ..Default::default()
        }));
    }

    #[test]
    fn bookkeeping_headers_are_dropped_and_the_replay_reason_kept() {
        for name in [
            "x-death",
            "x-first-death-queue",
            "x-delivery-count",
            "x-dead-letter-reason",
            "x-tidings-prior-deliveries",
            tidings_core::PARKED_DELIVERIES_HEADER,
            tidings_core::PARKED_AT_HEADER,
            tidings_core::FIRST_FAILURE_HEADER,
        ] {
            assert!(is_bookkeeping(name), "{name}");
        }
        for name in [REPLAYED_REASON_HEADER, "traceparent", "ce-id"] {
            assert!(!is_bookkeeping(name), "{name}");
        }
    }
}
