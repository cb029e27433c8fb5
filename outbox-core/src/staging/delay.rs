//! When the relay may first publish a staged event.

use std::time::{Duration, SystemTime};

/// When a staged event becomes visible to the relay: a delay after its
/// commit ([`Staged::delay`](super::Staged::delay)) or a time
/// ([`Staged::not_before`](super::Staged::not_before)).
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use tidings_core::staging::Delay;
///
/// let now = SystemTime::now();
/// assert_eq!(Delay::For(Duration::from_secs(5)).available_at(now), now + Duration::from_secs(5));
/// let past = now - Duration::from_secs(60);
/// assert_eq!(Delay::Until(past).available_at(now), now, "a time passed means now");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delay {
    /// This long after the commit.
    For(Duration),
    /// Not before this time; a time already passed means at once.
    Until(SystemTime),
}

impl Delay {
    /// When the event becomes visible, for a commit at `now`.
    pub fn available_at(self, now: SystemTime) -> SystemTime {
        match self {
            Self::For(delay) => now + delay,
            Self::Until(at) => at.max(now),
        }
    }

    /// How long after `now` the event becomes visible.
    pub fn after(self, now: SystemTime) -> Duration {
        match self {
            Self::For(delay) => delay,
            Self::Until(at) => at.duration_since(now).unwrap_or_default(),
        }
    }

    /// The time of a [`Until`](Self::Until), `None` for a
    /// [`For`](Self::For).
    pub fn until(self) -> Option<SystemTime> {
        match self {
            Self::For(_) => None,
            Self::Until(at) => Some(at),
        }
    }

    /// The delay of a [`For`](Self::For), zero for an
    /// [`Until`](Self::Until).
    pub fn duration(self) -> Duration {
        match self {
            Self::For(delay) => delay,
            Self::Until(_) => Duration::ZERO,
        }
    }
}

impl From<Duration> for Delay {
    fn from(delay: Duration) -> Self {
        Self::For(delay)
    }
}

impl From<SystemTime> for Delay {
    fn from(at: SystemTime) -> Self {
        Self::Until(at)
    }
}
