use std::time::Duration;

use crate::Backoff;

/// How often and how patiently the relay retries a row whose publish failed
/// with a transient error.
///
/// The n-th retry waits as the policy's [`Backoff`] says: about
/// `base * 2^(n-1)`, capped, with jitter. After `max_attempts` publish
/// attempts the row is marked failed.
///
/// ```
/// use std::time::Duration;
/// use tidings_core::{Backoff, RetryPolicy};
///
/// const RETRY: RetryPolicy = RetryPolicy::new()
///     .max_attempts(20)
///     .backoff(Backoff::new(Duration::from_secs(5), Duration::from_secs(600)));
/// assert_eq!(RETRY.get_backoff().get_max(), Duration::from_secs(600));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    pub(crate) max_attempts: u32,
    pub(crate) backoff: Backoff,
}

impl RetryPolicy {
    /// Default [`max_attempts`](Self::max_attempts).
    pub const DEFAULT_MAX_ATTEMPTS: u32 = 10;
    /// Default [`backoff`](Self::backoff): 1 s, doubling up to 5 min.
    pub const DEFAULT_BACKOFF: Backoff =
        Backoff::new(Duration::from_secs(1), Duration::from_secs(300));

    /// The defaults: 10 attempts, 1 s doubling to a 5 min cap.
    pub const fn new() -> Self {
        Self {
            max_attempts: Self::DEFAULT_MAX_ATTEMPTS,
            backoff: Self::DEFAULT_BACKOFF,
        }
    }

    /// Publish attempts before the row is failed; at least 1. Defaults to
    /// [`DEFAULT_MAX_ATTEMPTS`](Self::DEFAULT_MAX_ATTEMPTS).
    pub const fn max_attempts(mut self, max_attempts: u32) -> Self {
        self.max_attempts = max_attempts;
        self
    }

    /// The wait between attempts. Defaults to
    /// [`DEFAULT_BACKOFF`](Self::DEFAULT_BACKOFF).
    pub const fn backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    pub(crate) fn problem(&self) -> Option<&'static str> {
        if self.max_attempts == 0 {
            Some("max_attempts must be at least 1")
        } else if self.backoff.get_base().is_zero() {
            Some("the backoff's base must be positive")
        } else if self.backoff.get_max() < self.backoff.get_base() {
            Some("the backoff's cap must not be below its base")
        } else {
            None
        }
    }

    /// The [`max_attempts`](Self::max_attempts) setting.
    pub const fn get_max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// The [`backoff`](Self::backoff) setting.
    pub const fn get_backoff(&self) -> Backoff {
        self.backoff
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self::new()
    }
}
