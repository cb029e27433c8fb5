//! What the operations report, ready to print or serialize: durations in
//! seconds, payloads as text.

use std::time::Duration;

use serde::Serialize;
use tidings_core::{ConsumerStats, OutboxStats};

/// One route's backlog.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RouteStatus {
    /// The route.
    pub route: String,
    /// Rows waiting to be claimed, scheduled retries included.
    pub pending: u64,
    /// Rows claimed and not yet settled.
    pub in_flight: u64,
    /// Rows failed for good.
    pub failed: u64,
    /// Published rows still retained.
    pub retained: u64,
    /// Age of the oldest pending row, in seconds.
    pub oldest_pending_secs: Option<f64>,
}

impl RouteStatus {
    /// The status of `route` from its stats.
    pub fn new(route: impl Into<String>, stats: OutboxStats) -> Self {
        Self {
            route: route.into(),
            pending: stats.pending,
            in_flight: stats.in_flight,
            failed: stats.failed,
            retained: stats.published,
            oldest_pending_secs: stats.oldest_pending_age.map(secs),
        }
    }
}

/// One consumer's inbox.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConsumerStatus {
    /// The consumer.
    pub consumer: String,
    /// Events marked handled.
    pub marks: u64,
    /// Age of the oldest mark, in seconds.
    pub oldest_mark_secs: Option<f64>,
}

impl From<ConsumerStats> for ConsumerStatus {
    fn from(stats: ConsumerStats) -> Self {
        Self {
            consumer: stats.consumer,
            marks: stats.marks,
            oldest_mark_secs: stats.oldest_mark_age.map(secs),
        }
    }
}

/// Every route and every consumer of a store.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Status {
    /// The routes, in name order.
    pub routes: Vec<RouteStatus>,
    /// The inbox's consumers, in name order.
    pub consumers: Vec<ConsumerStatus>,
}

/// What a purge did or, dry, would do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PurgeReport {
    /// Rows matching when it started.
    pub matched: u64,
    /// Rows deleted (0 on a dry run).
    pub deleted: u64,
    /// Whether nothing was changed.
    pub dry_run: bool,
}

/// A duration in seconds, to the millisecond.
pub(crate) fn secs(duration: Duration) -> f64 {
    (duration.as_millis() as f64) / 1000.0
}
