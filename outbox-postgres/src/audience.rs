//! Who hears a store's wake-up hints.
//!
//! A hint sent after a commit costs a statement and a small transaction,
//! and a `NOTIFY` inside a transaction serialises its commit with every
//! other one sending one. Both are wasted when nobody listens: a service
//! whose relays run in the staging process (woken directly at commit), or
//! one staging while its relays are down. So every
//! [`PgWakeupSource`](crate::PgWakeupSource) holds a shared advisory lock keyed on
//! its channel while it listens (a session lock, gone with its connection),
//! and a store looks for those locks in `pg_locks` at most once every
//! [`RECHECK`]. Until its first look, and whenever the last one is older
//! than that, the store assumes somebody listens, so a relay started in
//! another process hears hints within about a second (and polls meanwhile).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The first key of the listeners' advisory locks (the second is
/// `hashtext(channel)`); the bytes spell "tidi".
pub(crate) const LOCK_SPACE: i32 = 0x7469_6469;

/// How long one look at the listeners is trusted.
pub(crate) const RECHECK: Duration = Duration::from_secs(1);

/// Who listens on a store's channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Listeners {
    /// Any listener at all: a `NOTIFY` in a transaction reaches it.
    pub(crate) anywhere: bool,
    /// A listener the store cannot wake directly (in another process, or
    /// not made by the store): only a hint reaches it.
    pub(crate) elsewhere: bool,
}

impl Listeners {
    /// What the store assumes while it does not know: everybody listens.
    pub(crate) const ASSUMED: Self = Self {
        anywhere: true,
        elsewhere: true,
    };
}

/// The last look at a channel's listeners, read on every commit, so kept in
/// one atomic word: the milliseconds from `start` to the look, plus one (zero
/// means never looked), then one bit per answer.
#[derive(Debug)]
pub(crate) struct Audience {
    start: Instant,
    last: AtomicU64,
}

impl Default for Audience {
    fn default() -> Self {
        Self {
            start: Instant::now(),
            last: AtomicU64::new(0),
        }
    }
}

impl Audience {
    /// The listeners seen within [`RECHECK`], or `None` when it is time to
    /// look again.
    pub(crate) fn known(&self) -> Option<Listeners> {
        let last = self.last.load(Ordering::Acquire);
        let looked_at = (last >> 2).checked_sub(1)?;
        let age = self.elapsed_millis().saturating_sub(looked_at);
        (age <= RECHECK.as_millis() as u64).then_some(Listeners {
            anywhere: last & 1 != 0,
            elsewhere: last & 2 != 0,
        })
    }

    /// Records what a look found, as of now.
    pub(crate) fn record(&self, seen: Listeners) {
        let word = ((self.elapsed_millis() + 1) << 2)
            | u64::from(seen.elsewhere) << 1
            | u64::from(seen.anywhere);
        self.last.store(word, Ordering::Release);
    }

    fn elapsed_millis(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX >> 3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_until_recorded() {
        assert_eq!(Audience::default().known(), None);
    }

    #[test]
    fn keeps_both_answers() {
        let audience = Audience::default();
        for anywhere in [false, true] {
            for elsewhere in [false, true] {
                let seen = Listeners {
                    anywhere,
                    elsewhere,
                };
                audience.record(seen);
                assert_eq!(audience.known(), Some(seen));
            }
        }
    }

    #[test]
    fn forgets_after_the_recheck_interval() {
        let audience = Audience {
            start: Instant::now() - RECHECK * 3,
            last: AtomicU64::new(0),
        };
        // A look recorded as of the start, so three intervals old.
        audience.last.store(1 << 2 | 1, Ordering::Release);
        assert_eq!(audience.known(), None);
    }
}
