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
//! skip the store's own hints when those arrive. When no other listener
//! exists, no hint is sent at all (see [`audience`](crate::audience)).

use std::sync::atomic::{AtomicI32, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use sqlx::{ConnectOptions, PgConnection, PgPool};
use tidings_core::Wakeup;

use crate::PgOutboxStore;
use crate::audience::{LOCK_SPACE, Listeners};

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
/// connects afresh. It also looks up who listens, for the
/// [`Audience`](crate::audience::Audience). Behind a transaction pooler,
/// where the store opens no connection of its own, both go through the
/// pool instead.
#[derive(Debug, Default)]
pub(crate) struct HintConnection {
    slot: Mutex<Option<PgConnection>>,
}

impl HintConnection {
    /// Sends `store`'s hint, signed with its token.
    pub(crate) async fn send(&self, store: &PgOutboxStore) -> Result<(), sqlx::Error> {
        let inner = store.inner();
        let query = sqlx::query(inner.sql.announce.clone())
            .persistent(store.persistent())
            .bind(&inner.channel)
            .bind(&inner.token);
        if !store.persistent() {
            let mut session = store.session().await?;
            query.execute(&mut *session).await?;
            return session.finish().await;
        }
        let mut connection = self.take(&inner.pool).await?;
        query.execute(&mut connection).await?;
        self.put(connection);
        Ok(())
    }

    /// Looks up who listens on `store`'s channel, apart from the `own`
    /// backends of this process's listeners.
    pub(crate) async fn listeners(
        &self,
        store: &PgOutboxStore,
        own: Vec<i32>,
    ) -> Result<Listeners, sqlx::Error> {
        let inner = store.inner();
        let query = sqlx::query_as(inner.sql.listeners.clone())
            .persistent(store.persistent())
            .bind(LOCK_SPACE)
            .bind(&inner.channel)
            .bind(own);
        let (anywhere, elsewhere): (bool, bool) = if !store.persistent() {
            let mut session = store.session().await?;
            let found = query.fetch_one(&mut *session).await?;
            session.finish().await?;
            found
        } else {
            let mut connection = self.take(&inner.pool).await?;
            let found = query.fetch_one(&mut connection).await?;
            self.put(connection);
            found
        };
        Ok(Listeners {
            anywhere,
            elsewhere,
        })
    }

    async fn take(&self, pool: &PgPool) -> Result<PgConnection, sqlx::Error> {
        let kept = self
            .slot
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        match kept {
            Some(connection) => Ok(connection),
            None => pool.connect_options().connect().await,
        }
    }

    fn put(&self, connection: PgConnection) {
        *self.slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(connection);
    }
}

/// A registered listener: its wake-up, and the backend its connection
/// runs on while it listens (zero while it does not).
type Entry = (u64, Wakeup, Arc<AtomicI32>);

/// The wake-ups of a store's listeners in this process, woken at commit.
#[derive(Debug, Default)]
pub(crate) struct LocalWakeups {
    next: AtomicU64,
    wakeups: Mutex<Vec<Entry>>,
}

impl LocalWakeups {
    /// Adds `wakeup` until the returned registration is dropped.
    pub(crate) fn register(self: &Arc<Self>, wakeup: Wakeup) -> Registration {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let backend = Arc::new(AtomicI32::new(0));
        self.lock().push((id, wakeup, backend.clone()));
        Registration {
            wakeups: self.clone(),
            id,
            backend,
        }
    }

    /// Wakes every registered wake-up.
    pub(crate) fn wake_all(&self) {
        for (_, wakeup, _) in self.lock().iter() {
            wakeup.wake();
        }
    }

    /// The backends the registered listeners listen on.
    pub(crate) fn backends(&self) -> Vec<i32> {
        let lock = self.lock();
        let backends = lock.iter().map(|(_, _, b)| b.load(Ordering::Acquire));
        backends.filter(|b| *b != 0).collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Entry>> {
        self.wakeups.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A listener's place among a store's [`LocalWakeups`], given up on drop.
#[derive(Debug)]
pub(crate) struct Registration {
    wakeups: Arc<LocalWakeups>,
    id: u64,
    backend: Arc<AtomicI32>,
}

impl Registration {
    /// The listener now listens on `backend`, or on none with zero.
    pub(crate) fn listening_on(&self, backend: i32) {
        self.backend.store(backend, Ordering::Release);
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.wakeups.lock().retain(|(id, _, _)| *id != self.id);
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
