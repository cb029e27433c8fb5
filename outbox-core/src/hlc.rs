//! A hybrid logical clock: close to wall time, yet always ahead of every
//! stamp this process has issued or seen, so a reaction sorts after its
//! cause across replicas.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, UNIX_EPOCH};

use crate::clock::SharedClock;

const LOGICAL_BITS: u32 = 16;

/// A hybrid logical clock stamp: milliseconds since the Unix epoch in the
/// high 48 bits, a logical counter in the low 16. Ordered as an integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Hlc(u64);

impl Hlc {
    /// A stamp from its packed form.
    pub const fn from_u64(packed: u64) -> Self {
        Self(packed)
    }

    /// The packed form, for storage and headers.
    pub const fn as_u64(self) -> u64 {
        self.0
    }

    /// The physical part, in milliseconds since the Unix epoch.
    pub const fn physical_ms(self) -> u64 {
        self.0 >> LOGICAL_BITS
    }

    /// The logical counter.
    pub const fn logical(self) -> u16 {
        (self.0 & 0xffff) as u16
    }
}

impl fmt::Display for Hlc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.physical_ms(), self.logical())
    }
}

/// Issues [`Hlc`] stamps. Clones share one state.
#[derive(Debug, Clone)]
pub struct HybridClock {
    clock: SharedClock,
    max_drift: Duration,
    last: Arc<Mutex<u64>>,
}

/// A remote stamp too far ahead of the local clock to be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "remote clock stamp {remote} is {ahead:?} ahead of local time, more than the {max_drift:?} allowed"
)]
pub struct DriftError {
    /// The stamp received.
    pub remote: Hlc,
    /// How far ahead of local wall time it is.
    pub ahead: Duration,
    /// The drift allowed.
    pub max_drift: Duration,
}

impl HybridClock {
    /// Default largest drift accepted from a remote stamp.
    pub const DEFAULT_MAX_DRIFT: Duration = Duration::from_secs(60);

    /// A clock reading wall time from `clock`.
    pub fn new(clock: SharedClock) -> Self {
        Self {
            clock,
            max_drift: Self::DEFAULT_MAX_DRIFT,
            last: Arc::new(Mutex::new(0)),
        }
    }

    /// Sets the largest drift accepted by [`observe`](Self::observe).
    pub fn max_drift(mut self, max_drift: Duration) -> Self {
        self.max_drift = max_drift;
        self
    }

    /// A new stamp, greater than every stamp issued or observed before.
    pub fn now(&self) -> Hlc {
        self.advance(0)
    }

    /// Merges a stamp seen on a consumed message; the result and every later
    /// stamp are greater than it. A stamp further ahead of local time than
    /// the allowed drift is refused and changes nothing.
    ///
    /// # Errors
    ///
    /// [`DriftError`] when `remote` is further ahead of local wall time than the
    /// allowed drift; the clock is left unchanged.
    pub fn observe(&self, remote: Hlc) -> Result<Hlc, DriftError> {
        let wall = self.wall_ms();
        if remote.physical_ms() > wall {
            let ahead = Duration::from_millis(remote.physical_ms() - wall);
            if ahead > self.max_drift {
                return Err(DriftError {
                    remote,
                    ahead,
                    max_drift: self.max_drift,
                });
            }
        }
        Ok(self.advance(remote.as_u64()))
    }

    fn advance(&self, seen: u64) -> Hlc {
        let physical = self.wall_ms() << LOGICAL_BITS;
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        let next = physical
            .max(last.saturating_add(1))
            .max(seen.saturating_add(1));
        *last = next;
        Hlc(next)
    }

    fn wall_ms(&self) -> u64 {
        let since = self
            .clock
            .now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        (since.as_millis() as u64) & ((1 << (64 - LOGICAL_BITS)) - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ManualClock;
    use std::time::SystemTime;

    fn clock() -> (ManualClock, HybridClock) {
        let manual = ManualClock::starting_now();
        (manual.clone(), HybridClock::new(Arc::new(manual)))
    }

    #[test]
    fn stamps_are_strictly_monotonic_with_a_frozen_clock() {
        let (_, hlc) = clock();
        let stamps: Vec<_> = (0..1000).map(|_| hlc.now()).collect();
        assert!(stamps.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(stamps[0].physical_ms(), stamps[999].physical_ms());
    }

    #[test]
    fn stamps_stay_monotonic_when_wall_time_goes_back() {
        let (manual, hlc) = clock();
        let before = hlc.now();
        manual.set(SystemTime::now() - Duration::from_secs(3600));
        assert!(hlc.now() > before);
    }

    #[test]
    fn follows_wall_time_when_it_moves_on() {
        let (manual, hlc) = clock();
        let a = hlc.now();
        manual.advance(Duration::from_millis(5));
        let b = hlc.now();
        assert_eq!(b.physical_ms(), a.physical_ms() + 5);
        assert_eq!(b.logical(), 0);
    }

    #[test]
    fn observe_moves_past_a_remote_stamp() {
        let (_, hlc) = clock();
        let local = hlc.now();
        let remote = Hlc::from_u64(local.as_u64() + (1000 << LOGICAL_BITS) + 7);
        let merged = hlc.observe(remote).unwrap();
        assert!(merged > remote);
        assert!(hlc.now() > merged);
    }

    #[test]
    fn observe_of_an_older_stamp_keeps_local_order() {
        let (_, hlc) = clock();
        let local = hlc.now();
        let merged = hlc.observe(Hlc::from_u64(1)).unwrap();
        assert!(merged > local);
    }

    #[test]
    fn observe_refuses_stamps_beyond_max_drift() {
        let (_, hlc) = clock();
        let hlc = hlc.max_drift(Duration::from_secs(1));
        let local = hlc.now();
        let remote = Hlc::from_u64(local.as_u64() + (10_000 << LOGICAL_BITS));
        let err = hlc.observe(remote).unwrap_err();
        assert!(err.ahead >= Duration::from_secs(9));
        assert!(hlc.now() < remote);
    }
}
