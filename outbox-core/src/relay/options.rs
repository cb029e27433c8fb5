use std::time::Duration;

use crate::Backoff;

/// How a [`Relay`](super::Relay) works: a consuming setter named after
/// each setting, and `get_*` to read one back, as every options type of
/// tidings has.
///
/// ```
/// use std::time::Duration;
/// use tidings_core::relay::RelayOptions;
///
/// let options = RelayOptions::default()
///     .batch_size(200)
///     .sweep_interval(None)
///     .poll_interval(Duration::from_secs(5));
/// assert_eq!(options.get_batch_size(), 200);
/// assert_eq!(options.get_sweep_interval(), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RelayOptions {
    pub(crate) batch_size: usize,
    pub(crate) publish_window: usize,
    pub(crate) lease: Duration,
    pub(crate) poll_interval: Duration,
    pub(crate) max_crashes: u32,
    pub(crate) error_backoff: Backoff,
    pub(crate) sweep_interval: Option<Duration>,
    pub(crate) drains: usize,
}

impl RelayOptions {
    /// Default [`batch_size`](Self::batch_size).
    pub const DEFAULT_BATCH_SIZE: usize = 1000;
    /// Default [`publish_window`](Self::publish_window): a whole default
    /// claim, which a publisher with several confirm channels spreads over
    /// them. Also the most rows a claim that crashed takes to the failed
    /// state with a row that keeps killing the relay.
    pub const DEFAULT_PUBLISH_WINDOW: usize = 1000;
    /// Default [`lease`](Self::lease).
    pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);
    /// Default [`poll_interval`](Self::poll_interval).
    pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(1);
    /// Default [`max_crashes`](Self::max_crashes).
    pub const DEFAULT_MAX_CRASHES: u32 = 3;
    /// Default [`error_backoff`](Self::error_backoff).
    pub const DEFAULT_ERROR_BACKOFF: Backoff =
        Backoff::new(Duration::from_millis(100), Duration::from_secs(30));
    /// Default [`sweep_interval`](Self::sweep_interval): a sixth of the
    /// default lease, so a dead relay's rows wait at most a little longer
    /// than their lease.
    pub const DEFAULT_SWEEP_INTERVAL: Duration = Duration::from_secs(5);
    /// Default [`drains`](Self::drains): one, so batches reach the
    /// publisher one after another and the messages of an ordering key
    /// keep their order across batches, as consumers of unordered routes
    /// with keys (Kafka partitions, RabbitMQ's keyed channels) expect.
    pub const DEFAULT_DRAINS: usize = 1;
}

crate::settings!(RelayOptions {
    /// The most rows claimed per pass. A relay claims only a
    /// [`publish_window`](Self::publish_window)'s worth when it starts and
    /// after a claim that held a row with crashes counted against it, so a
    /// row that keeps killing the relay fails at most a window's worth of
    /// rows with it, however large this is.
    ///
    /// At least 1; default [`DEFAULT_BATCH_SIZE`](Self::DEFAULT_BATCH_SIZE).
    batch_size(batch_size: usize) = batch_size.max(1), get_batch_size: usize;
    /// Envelopes handed to the publisher at once: a claimed batch larger
    /// than this is published in windows of this size, each after the one
    /// before has been answered, so it bounds how many messages await the
    /// broker at a time. Claiming more rows than a window spreads the
    /// store's fixed cost per claim and settle over more events.
    ///
    /// At least 1; default
    /// [`DEFAULT_PUBLISH_WINDOW`](Self::DEFAULT_PUBLISH_WINDOW).
    publish_window(publish_window: usize) = publish_window.max(1), get_publish_window: usize;
    /// How long a claim holds before a sweep may take the rows back. Longer
    /// than the slowest publish of a batch. Default
    /// [`DEFAULT_LEASE`](Self::DEFAULT_LEASE).
    lease(lease: Duration), get_lease: Duration;
    /// The polling floor: the longest the relay sleeps without a wake-up;
    /// default [`DEFAULT_POLL_INTERVAL`](Self::DEFAULT_POLL_INTERVAL).
    poll_interval(poll_interval: Duration), get_poll_interval: Duration;
    /// Claims that never finished before a row is failed as poison
    /// (crash-loop protection); default
    /// [`DEFAULT_MAX_CRASHES`](Self::DEFAULT_MAX_CRASHES).
    max_crashes(max_crashes: u32), get_max_crashes: u32;
    /// Waits between passes while the store is unavailable; default
    /// [`DEFAULT_ERROR_BACKOFF`](Self::DEFAULT_ERROR_BACKOFF).
    error_backoff(error_backoff: Backoff), get_error_backoff: Backoff;
    /// How often the relay returns its route's rows whose claims died
    /// (expired leases, claims of a dead relay) to pending, so a relay
    /// started alone after a crash recovers what the dead one held. `None`
    /// leaves that to a separate [`Sweeper`](super::Sweeper) step. Default
    /// [`DEFAULT_SWEEP_INTERVAL`](Self::DEFAULT_SWEEP_INTERVAL).
    sweep_interval(sweep_interval: impl Into<Option<Duration>>) = sweep_interval.into(),
        get_sweep_interval: Option<Duration>;
    /// How many pipelined drains work an unordered route's backlog at
    /// once, each claiming, publishing and settling its own batches; the
    /// store hands each its own rows, and their publishes overlap whatever
    /// the publisher says of a batch being queued
    /// ([`Publisher::send`](crate::Publisher::send)). The others
    /// start only once a claim comes back full, so a relay woken for a few
    /// rows claims once, and only while claims are wide: after a claim
    /// holding a row that crashed, a single drain claims a window at a
    /// time. Per-key routes always claim one batch at a time.
    ///
    /// With more than one, batches are published side by side, so
    /// messages of one ordering key from different batches may reach the
    /// broker out of order: raise it only where nothing relies on the
    /// order of keyed messages of an unordered route. Two measured about
    /// 5 % more into RabbitMQ (the bench's drain-rabbitmq) before a single
    /// drain overlapped its own publishes; not measured since.
    ///
    /// At least 1; default [`DEFAULT_DRAINS`](Self::DEFAULT_DRAINS).
    drains(drains: usize) = drains.max(1), get_drains: usize;
});

impl Default for RelayOptions {
    fn default() -> Self {
        Self {
            batch_size: Self::DEFAULT_BATCH_SIZE,
            publish_window: Self::DEFAULT_PUBLISH_WINDOW,
            lease: Self::DEFAULT_LEASE,
            poll_interval: Self::DEFAULT_POLL_INTERVAL,
            max_crashes: Self::DEFAULT_MAX_CRASHES,
            error_backoff: Self::DEFAULT_ERROR_BACKOFF,
            sweep_interval: Some(Self::DEFAULT_SWEEP_INTERVAL),
            drains: Self::DEFAULT_DRAINS,
        }
    }
}
