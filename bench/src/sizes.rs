//! The sizes of every scenario, set by the command line's options.

use std::time::Duration;

use tidings_core::relay::RelayOptions;
use tidings_postgres::Layout;

/// The sizes of every scenario; the defaults are the full run.
#[derive(Debug, Clone)]
pub(crate) struct Sizes {
    /// Transactions of the stage scenario.
    pub(crate) stage_transactions: usize,
    /// Concurrent clients of the stage and consume scenarios.
    pub(crate) clients: usize,
    /// Pending events of the drain scenarios.
    pub(crate) drain_events: usize,
    /// The backlog of drain-wal, staged with its relay stopped.
    pub(crate) wal_events: usize,
    /// Rows claimed per pass, by the relay and by the raw loops; also the
    /// confirm window of every side of drain-rabbitmq.
    pub(crate) batch_size: usize,
    /// Rows the wide relay of drain-rabbitmq claims at once, published in
    /// windows of `batch_size`.
    pub(crate) wide_claim: usize,
    /// How long each latency rate runs.
    pub(crate) latency_duration: Duration,
    /// The steady rates of the latency scenario, events per second.
    pub(crate) latency_rates: Vec<u32>,
    /// How the latency scenario's relays are woken.
    pub(crate) latency_wake: LatencyWake,
    /// Messages of the consume scenario.
    pub(crate) consume_messages: usize,
    /// The consumer's `max_batch` in the consume scenario's batched run.
    pub(crate) consume_batch: usize,
    /// How long the handler fails in the middle of the stored-outage run.
    pub(crate) outage_duration: Duration,
    /// The steady rate published through the stored-outage run, events per
    /// second.
    pub(crate) outage_rate: u32,
    /// Events the relay and consumer processes of the memory scenario move.
    pub(crate) memory_events: usize,
    /// Published rows kept in the table of the growth scenario.
    pub(crate) growth_retained: usize,
    /// Events of each round of the chaos scenario.
    pub(crate) chaos_events: usize,
    /// The mean run of a relay or consumer process between kills in the
    /// chaos scenario (each run lasts half to twice this).
    pub(crate) chaos_kill_every: Duration,
    /// Events of each round of the scale-out scenario.
    pub(crate) scale_events: usize,
    /// How long each run of the pinned scenario stages at its rate.
    pub(crate) pinned_duration: Duration,
    /// The steady rate of the pinned scenario, events per second.
    pub(crate) pinned_rate: u32,
    /// Transactions of mongo-stage and pending events of mongo-drain-noop.
    pub(crate) mongo_events: usize,
    /// The steady rates of mongo-latency, events per second.
    pub(crate) mongo_rates: Vec<u32>,
    /// The layout of the PostgreSQL outboxes that delete published rows
    /// (pinned runs both).
    pub(crate) layout: Layout,
}

/// How the latency scenario's relays are woken (`--wake`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LatencyWake {
    /// By the store: in process, and by NOTIFY from another instance (the
    /// default).
    Store,
    /// By a log-tailing store's reader of the slot, beside NOTIFY, both on
    /// the cluster with `wal_level=logical`.
    Wal,
}

impl Default for Sizes {
    fn default() -> Self {
        Self {
            stage_transactions: 20_000,
            clients: 8,
            drain_events: 50_000,
            wal_events: 200_000,
            batch_size: 100,
            wide_claim: 500,
            latency_duration: Duration::from_secs(20),
            latency_rates: vec![200, 2_000],
            latency_wake: LatencyWake::Store,
            consume_messages: 20_000,
            consume_batch: 16,
            outage_duration: Duration::from_secs(30),
            outage_rate: 500,
            memory_events: 50_000,
            growth_retained: 1_000_000,
            chaos_events: 20_000,
            chaos_kill_every: Duration::from_secs(1),
            scale_events: 50_000,
            pinned_duration: Duration::from_secs(180),
            pinned_rate: 500,
            mongo_events: 2_000,
            mongo_rates: vec![20, 100],
            layout: Layout::Plain,
        }
    }
}

impl Sizes {
    /// The relay's options in every scenario: the default, with the run's
    /// batch size.
    pub(crate) fn relay_options(&self) -> RelayOptions {
        RelayOptions::default().batch_size(self.batch_size)
    }

    /// Every count multiplied by `factor` (at least one batch each).
    pub(crate) fn scaled(mut self, factor: f64) -> Self {
        let scale = |n: usize| ((n as f64 * factor).round() as usize).max(10);
        self.stage_transactions = scale(self.stage_transactions);
        self.drain_events = scale(self.drain_events);
        self.wal_events = scale(self.wal_events);
        self.consume_messages = scale(self.consume_messages);
        self.memory_events = scale(self.memory_events);
        self.growth_retained = scale(self.growth_retained);
        self.chaos_events = scale(self.chaos_events);
        self.scale_events = scale(self.scale_events);
        self.mongo_events = scale(self.mongo_events);
        let secs = (self.latency_duration.as_secs_f64() * factor).max(0.5);
        self.latency_duration = Duration::from_secs_f64(secs);
        let secs = (self.outage_duration.as_secs_f64() * factor).max(1.0);
        self.outage_duration = Duration::from_secs_f64(secs);
        let secs = (self.pinned_duration.as_secs_f64() * factor).max(1.0);
        self.pinned_duration = Duration::from_secs_f64(secs);
        self
    }
}
