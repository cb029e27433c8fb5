//! Wake-up hints sent after a staging transaction commits.
//!
//! A `NOTIFY` inside a transaction takes a database-wide lock at commit and
//! holds it through the WAL flush, so every transaction sending one commits
//! alone: on a 2-core machine that halves staging throughput. Transactions
//! opened by [`PgOutboxStore::begin`](crate::PgOutboxStore::begin) instead
//! announce their commit here: one hint at a time is in flight, sent in a
//! statement of its own, and commits arriving meanwhile are covered by one
//! more hint after it. Relays still poll, so a hint lost to a failure costs
//! latency only. Hints go out on a connection of their own, so they never
//! wait for, or check out, one of the pool's.
//!
//! Relays in the same process need no round trip: the listeners made by
//! the store are registered with it and woken directly at commit, and they
//! skip the store's own hints when those arrive.

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use sqlx::{ConnectOptions, PgConnection, PgPool, SqlStr};
use tidings_core::Wakeup;

/// Nothing to send.
const IDLE: u8 = 0;
/// A hint is being sent.
const SENDING: u8 = 1;
/// A hint is being sent and another commit needs one after it.
const AGAIN: u8 = 2;

/// Coalesces hints: at most one sender, and one more send for every burst
/// of commits during a send.
#[derive(Debug, Default)]
pub(crate) struct Announcer {
    state: AtomicU8,
}

impl Announcer {
    /// Notes a commit to announce; `true` when the caller must start the
    /// sender, `false` when the running sender will cover it.
    pub(crate) fn request(&self) -> bool {
        let mut current = self.state.load(Ordering::Acquire);
        loop {
            let next = match current {
                IDLE => SENDING,
                SENDING => AGAIN,
                _ => return false,
            };
            match self
                .state
                .compare_exchange(current, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return current == IDLE,
                Err(actual) => current = actual,
            }
        }
    }

    /// Called by the sender after each send: `true` to send once more,
    /// `false` when it may stop.
    pub(crate) fn sent(&self) -> bool {
        let mut current = self.state.load(Ordering::Acquire);
        loop {
            let (next, again) = match current {
                AGAIN => (SENDING, true),
                _ => (IDLE, false),
            };
            match self
                .state
                .compare_exchange(current, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return again,
                Err(actual) => current = actual,
            }
        }
    }

    /// Forgets a sender that ended without finishing (its task was
    /// cancelled), so the next commit starts a new one.
    pub(crate) fn abandon(&self) {
        self.state.store(IDLE, Ordering::Release);
    }
}

/// The hint sender's connection: opened from the pool's settings on first
/// use, kept between hints and dropped after a failure, so the next hint
/// connects afresh.
#[derive(Debug, Default)]
pub(crate) struct HintConnection {
    slot: Mutex<Option<PgConnection>>,
}

impl HintConnection {
    /// Runs the hint statement `sql` for `channel`, signed with the
    /// sending store's `token`.
    pub(crate) async fn send(
        &self,
        pool: &PgPool,
        sql: &SqlStr,
        channel: &str,
        token: &str,
    ) -> Result<(), sqlx::Error> {
        let kept = self
            .slot
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let mut connection = match kept {
            Some(connection) => connection,
            None => pool.connect_options().connect().await?,
        };
        sqlx::query(sql.clone())
            .bind(channel)
            .bind(token)
            .execute(&mut connection)
            .await?;
        *self.slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(connection);
        Ok(())
    }
}

/// The wake-ups of a store's listeners in this process, woken at commit.
#[derive(Debug, Default)]
pub(crate) struct LocalWakeups {
    next: AtomicU64,
    wakeups: Mutex<Vec<(u64, Wakeup)>>,
}

impl LocalWakeups {
    /// Adds `wakeup` until the returned registration is dropped.
    pub(crate) fn register(self: &Arc<Self>, wakeup: Wakeup) -> Registration {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock().push((id, wakeup));
        Registration {
            wakeups: self.clone(),
            id,
        }
    }

    /// Wakes every registered wake-up.
    pub(crate) fn wake_all(&self) {
        for (_, wakeup) in self.lock().iter() {
            wakeup.wake();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(u64, Wakeup)>> {
        self.wakeups.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A listener's place among a store's [`LocalWakeups`], given up on drop.
#[derive(Debug)]
pub(crate) struct Registration {
    wakeups: Arc<LocalWakeups>,
    id: u64,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.wakeups.lock().retain(|(id, _)| *id != self.id);
    }
}

/// Resets the announcer if the sender task is dropped mid-send.
pub(crate) struct SenderGuard<'a> {
    announcer: &'a Announcer,
    armed: bool,
}

impl<'a> SenderGuard<'a> {
    pub(crate) fn new(announcer: &'a Announcer) -> Self {
        Self {
            announcer,
            armed: true,
        }
    }

    /// The sender finished normally; nothing to reset.
    pub(crate) fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for SenderGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.announcer.abandon();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_sender_and_one_more_send_per_burst() {
        let a = Announcer::default();
        assert!(a.request(), "the first commit starts the sender");
        assert!(!a.request(), "a commit during the send waits for it");
        assert!(!a.request(), "so does a third");
        assert!(a.sent(), "one more send covers both");
        assert!(!a.sent(), "then the sender stops");
        assert!(a.request(), "and the next commit starts it again");
    }
}
