//! Exponential backoff with jitter and a cap.

use std::time::Duration;

/// Exponential backoff: the n-th delay (1-based) is drawn from
/// `[c/2, c]` where `c = min(base * 2^(n-1), max)` ("equal jitter"), so
/// retries spread out without ever waiting less than half the schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    base: Duration,
    max: Duration,
}

impl Backoff {
    /// A schedule starting at `base` and capped at `max`.
    pub const fn new(base: Duration, max: Duration) -> Self {
        Self { base, max }
    }

    /// The first delay, before jitter.
    pub const fn get_base(&self) -> Duration {
        self.base
    }

    /// The cap no delay exceeds.
    pub const fn get_max(&self) -> Duration {
        self.max
    }

    /// The delay before retry `attempt` (1-based) without jitter: the upper
    /// bound of [`delay`](Self::delay).
    pub fn ceiling(&self, attempt: u32) -> Duration {
        let exponent = attempt.saturating_sub(1).min(31);
        self.base
            .checked_mul(1u32 << exponent)
            .unwrap_or(self.max)
            .min(self.max)
    }

    /// The jittered delay before retry `attempt` (1-based).
    pub fn delay(&self, attempt: u32) -> Duration {
        self.delay_at(attempt, fastrand::f64())
    }

    /// The delay for a given jitter draw in `[0, 1]`: 0 gives the lower
    /// bound, 1 the ceiling.
    pub fn delay_at(&self, attempt: u32, draw: f64) -> Duration {
        let ceiling = self.ceiling(attempt);
        let half = ceiling / 2;
        half + half.mul_f64(draw.clamp(0.0, 1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BACKOFF: Backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(10));

    #[test]
    fn ceiling_doubles_then_caps() {
        let ceilings: Vec<_> = (1..=9).map(|n| BACKOFF.ceiling(n).as_millis()).collect();
        assert_eq!(
            ceilings,
            [100, 200, 400, 800, 1600, 3200, 6400, 10_000, 10_000]
        );
        assert_eq!(BACKOFF.ceiling(0), Duration::from_millis(100));
        assert_eq!(BACKOFF.ceiling(u32::MAX), Duration::from_secs(10));
    }

    #[test]
    fn jitter_stays_within_half_and_full_ceiling() {
        for attempt in 1..=12 {
            let ceiling = BACKOFF.ceiling(attempt);
            assert_eq!(BACKOFF.delay_at(attempt, 0.0), ceiling / 2);
            assert_eq!(BACKOFF.delay_at(attempt, 1.0), ceiling);
            for _ in 0..200 {
                let d = BACKOFF.delay(attempt);
                assert!(
                    d >= ceiling / 2 && d <= ceiling,
                    "{d:?} outside {ceiling:?}"
                );
            }
        }
    }

    #[test]
    fn jitter_actually_varies() {
        let draws: std::collections::HashSet<_> = (0..50).map(|_| BACKOFF.delay(5)).collect();
        assert!(draws.len() > 10);
    }
}
