use std::time::Duration;

use crate::Backoff;

/// How often and how patiently the relay retries a row whose publish failed
/// with a transient error.
///
/// The n-th retry waits `base_delay * 2^(n-1)`, capped at `max_backoff`, with
/// jitter (see [`Backoff`]). After `max_attempts` publish attempts the row is
/// marked failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    pub(crate) max_attempts: u32,
    pub(crate) base_delay: Duration,
    pub(crate) max_backoff: Duration,
}

impl RetryPolicy {
    /// Default [`max_attempts`](Self::max_attempts).
    pub const DEFAULT_MAX_ATTEMPTS: u32 = 10;
    /// Default [`base_delay`](Self::base_delay).
    pub const DEFAULT_BASE_DELAY: Duration = Duration::from_secs(1);
    /// Default [`max_backoff`](Self::max_backoff).
    pub const DEFAULT_MAX_BACKOFF: Duration = Duration::from_secs(300);

    /// The defaults: 10 attempts, 1 s base delay, 5 min cap.
    pub const fn new() -> Self {
        Self {
            max_attempts: Self::DEFAULT_MAX_ATTEMPTS,
            base_delay: Self::DEFAULT_BASE_DELAY,
            max_backoff: Self::DEFAULT_MAX_BACKOFF,
        }
    }

    /// Publish attempts before the row is failed; at least 1.
    pub const fn max_attempts(mut self, max_attempts: u32) -> Self {
        self.max_attempts = max_attempts;
        self
    }

    /// Delay before the first retry.
    pub const fn base_delay(mut self, base_delay: Duration) -> Self {
        self.base_delay = base_delay;
        self
    }

    /// The longest delay between two attempts.
    pub const fn max_backoff(mut self, max_backoff: Duration) -> Self {
        self.max_backoff = max_backoff;
        self
    }

    /// The backoff schedule of this policy.
    pub fn backoff(&self) -> Backoff {
        Backoff::new(self.base_delay, self.max_backoff)
    }

    pub(crate) fn problem(&self) -> Option<&'static str> {
        if self.max_attempts == 0 {
            Some("max_attempts must be at least 1")
        } else if self.base_delay.is_zero() {
            Some("base_delay must be positive")
        } else if self.max_backoff < self.base_delay {
            Some("max_backoff must not be below base_delay")
        } else {
            None
        }
    }

    /// The [`max_attempts`](Self::max_attempts) setting.
    pub const fn get_max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// The [`base_delay`](Self::base_delay) setting.
    pub const fn get_base_delay(&self) -> Duration {
        self.base_delay
    }

    /// The [`max_backoff`](Self::max_backoff) setting.
    pub const fn get_max_backoff(&self) -> Duration {
        self.max_backoff
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self::new()
    }
}
