//! Injectable wall clock, so tests control time.

use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A source of wall-clock time.
pub trait Clock: Debug + Send + Sync + 'static {
    /// The current time.
    fn now(&self) -> SystemTime;
}

/// A clock shared between components.
pub type SharedClock = Arc<dyn Clock>;

/// The operating system's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

impl SystemClock {
    /// The system clock as a [`SharedClock`].
    pub fn shared() -> SharedClock {
        Arc::new(SystemClock)
    }
}

/// A clock that moves only when told to. Clones share one time.
#[derive(Debug, Clone)]
pub struct ManualClock {
    now: Arc<Mutex<SystemTime>>,
}

impl ManualClock {
    /// A clock standing at `start`, truncated to microseconds.
    pub fn new(start: SystemTime) -> Self {
        Self {
            now: Arc::new(Mutex::new(truncate_to_micros(start))),
        }
    }

    /// A clock standing at the current system time.
    pub fn starting_now() -> Self {
        Self::new(SystemTime::now())
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        *self.lock() += by;
    }

    /// Sets the clock to `to`; it may go backwards, as real clocks do.
    pub fn set(&self, to: SystemTime) {
        *self.lock() = to;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SystemTime> {
        self.now.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        *self.lock()
    }
}

/// Drops sub-microsecond precision, which databases do not keep, so a time
/// read back equals the time written.
pub fn truncate_to_micros(time: SystemTime) -> SystemTime {
    match time.duration_since(UNIX_EPOCH) {
        Ok(since) => UNIX_EPOCH + Duration::from_micros(since.as_micros() as u64),
        Err(_) => time,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let clock = ManualClock::starting_now();
        let t0 = clock.now();
        assert_eq!(clock.now(), t0);
        clock.clone().advance(Duration::from_secs(5));
        assert_eq!(clock.now(), t0 + Duration::from_secs(5));
    }
}
