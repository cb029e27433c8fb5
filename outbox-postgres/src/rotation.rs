//! Rotation of a [rotated](crate::Layout::Rotated) outbox: each slot is
//! truncated while two others take the staging, its few live rows moved to
//! the current slot first.
//!
//! Relays drive it: a claim on a rotated store whose rotation is due starts
//! one in the background, at most one at a time per store and every
//! [`TRY_EVERY`] at most, so any process relaying the table rotates it and
//! nothing needs running apart; an explicit [`PgOutboxStore::rotate`] waits
//! for the store's running rotation to end. A rotation never waits for a
//! lock on the table: it locks its slot with `NOWAIT` or tries again a
//! little later, so claims, settles and staging never queue behind it.
//!
//! A claim's transaction holds a lock on every slot its plan reads until
//! it settles, and a relay woken by every commit claims nearly all the
//! time, so the slot would seldom be free. While a rotation tries, for
//! [`ARMED_FOR`] at most, the store's claims therefore leave its slot out
//! of their plans (`and r.slot <> n`, a constant, so PostgreSQL neither
//! reads nor locks it); the claims already holding it settle within a
//! publish. Rows still in the slot wait those few milliseconds, then move
//! to the current slot. Per-key claims look into every slot for a key's
//! older rows, so on a per-key route that claims without pause a slot is
//! truncated only between claims.

use std::sync::Mutex;
use std::sync::atomic::{AtomicI16, Ordering};
use std::time::{Duration, Instant};

use sqlx::{Connection, PgConnection};
use tidings_core::StoreError;
use tidings_core::port::error_chain;
use tracing::{debug, instrument, warn};

use crate::error::store_error;
use crate::sql::SlotStatements;
use crate::{Layout, PgOutboxStore};

/// How often a store tries to rotate, at most: four times a slot's length.
pub(crate) const TRY_EVERY: Duration = Duration::from_millis(250);

/// How long a rotation keeps trying to lock its slot, the store's claims
/// leaving the slot out meanwhile.
pub(crate) const ARMED_FOR: Duration = Duration::from_millis(100);

/// The pause between two tries to lock the slot.
const LOCK_PAUSE: Duration = Duration::from_millis(5);

/// No slot is being truncated.
const UNARMED: i16 = -1;

/// What one [`PgOutboxStore::rotate`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rotation {
    /// The slot was truncated, after its `moved` live rows went to the
    /// current slot.
    Truncated {
        /// The slot truncated.
        slot: i16,
        /// Rows moved to the current slot first.
        moved: u64,
    },
    /// The slot was already empty.
    Empty {
        /// The slot.
        slot: i16,
    },
    /// A transaction holds a lock on the slot (a claim, a settle, a
    /// staging transaction, or one that read the outbox); tried again
    /// later.
    Busy {
        /// The slot.
        slot: i16,
    },
    /// The slot holds more than [`MAX_MOVED`](crate::MAX_MOVED) live rows
    /// (a backlog): left as it is until its next turn.
    Crowded {
        /// The slot.
        slot: i16,
    },
}

/// When a store may try its next rotation, whether one is running, and
/// which slot it is truncating.
#[derive(Debug)]
pub(crate) struct RotationClock {
    state: Mutex<ClockState>,
    armed: AtomicI16,
    /// Held for the whole of each rotation, so an operator's
    /// [`PgOutboxStore::rotate`] waits for one the relay started instead of
    /// truncating the same slot beside it.
    turn: tokio::sync::Mutex<()>,
}

impl Default for RotationClock {
    fn default() -> Self {
        Self {
            state: Mutex::default(),
            armed: AtomicI16::new(UNARMED),
            turn: tokio::sync::Mutex::new(()),
        }
    }
}

#[derive(Debug, Default)]
struct ClockState {
    next: Option<Instant>,
    running: bool,
}

impl RotationClock {
    /// Takes the turn to rotate if one is due and none is running.
    fn take(&self) -> bool {
        let mut state = self.state.lock().expect("rotation clock");
        let due = state.next.is_none_or(|next| Instant::now() >= next);
        if state.running || !due {
            return false;
        }
        state.running = true;
        true
    }

    /// Ends a turn; the next is [`TRY_EVERY`] away.
    fn done(&self) {
        let mut state = self.state.lock().expect("rotation clock");
        state.running = false;
        state.next = Some(Instant::now() + TRY_EVERY);
    }
}

/// The slot a rotation is truncating, which the store's claims leave out
/// until this is dropped, however the rotation ends.
struct Armed<'a>(&'a AtomicI16);

impl<'a> Armed<'a> {
    fn new(armed: &'a AtomicI16, slot: i16) -> Self {
        armed.store(slot, Ordering::Release);
        Self(armed)
    }
}

impl Drop for Armed<'_> {
    fn drop(&mut self) {
        self.0.store(UNARMED, Ordering::Release);
    }
}

impl PgOutboxStore {
    /// The slot a rotation of this store is trying to truncate, which
    /// claims leave out of their plans; `None` mostly.
    pub(crate) fn skipped_slot(&self) -> Option<i16> {
        let armed = self.inner().rotation.armed.load(Ordering::Acquire);
        (armed != UNARMED).then_some(armed)
    }

    /// Starts a rotation in the background when this store's outbox is
    /// rotated and one is due. Called by every claim.
    pub(crate) fn rotate_when_due(&self) {
        if self.options().get_layout() != Layout::Rotated || !self.inner().rotation.take() {
            return;
        }
        let store = self.clone();
        tokio::spawn(async move {
            match store.rotate().await {
                Ok(rotation) => debug!(?rotation, "outbox rotation"),
                Err(e) => warn!(error = %error_chain(&e), "outbox rotation failed"),
            }
            store.inner().rotation.done();
        });
    }

    /// Truncates the slot of a [rotated](Layout::Rotated) outbox that is
    /// due, moving its live rows to the current slot first, unless a
    /// transaction holds a lock on it or it holds a backlog. Relays call it
    /// on their own; it is public for operators and tests.
    ///
    /// # Errors
    ///
    /// [`StoreError::Invalid`] on a plain outbox; errors of the connection
    /// as elsewhere.
    #[instrument(skip_all, fields(db.system = "postgresql"), err)]
    pub async fn rotate(&self) -> Result<Rotation, StoreError> {
        let inner = self.inner();
        if inner.options.get_layout() != Layout::Rotated {
            return Err(StoreError::Invalid(
                "rotate needs a store with Layout::Rotated".to_owned(),
            ));
        }
        let _turn = inner.rotation.turn.lock().await;
        let mut session = self.session().await.map_err(store_error)?;
        let (current, slot): (i16, i16) = sqlx::query_as(inner.sql.rotate_slots.clone())
            .persistent(self.persistent())
            .fetch_one(&mut *session)
            .await
            .map_err(store_error)?;
        let statements = &inner.sql.slots[slot as usize];
        let size: i64 = sqlx::query_scalar(inner.sql.rotate_size.clone())
            .persistent(self.persistent())
            .bind(&statements.partition)
            .fetch_one(&mut *session)
            .await
            .map_err(store_error)?;
        if size == 0 {
            session.finish().await.map_err(store_error)?;
            return Ok(Rotation::Empty { slot });
        }
        let live: i64 = sqlx::query_scalar(statements.live.clone())
            .persistent(self.persistent())
            .fetch_one(&mut *session)
            .await
            .map_err(store_error)?;
        if live > crate::MAX_MOVED {
            session.finish().await.map_err(store_error)?;
            return Ok(Rotation::Crowded { slot });
        }
        let armed = Armed::new(&inner.rotation.armed, slot);
        let deadline = Instant::now() + ARMED_FOR;
        let rotation = loop {
            let tried = self.truncate(&mut session, statements, current, slot).await;
            match tried {
                Ok(Rotation::Busy { .. }) if Instant::now() < deadline => {
                    tokio::time::sleep(LOCK_PAUSE).await;
                }
                tried => break tried,
            }
        };
        drop(armed);
        let rotation = rotation?;
        session.finish().await.map_err(store_error)?;
        if let Rotation::Truncated { moved, .. } = rotation {
            debug!(slot, moved, "outbox slot truncated");
        }
        Ok(rotation)
    }

    /// Truncates `slot` in one transaction, its live rows moved to
    /// `current` first.
    async fn truncate(
        &self,
        conn: &mut PgConnection,
        statements: &SlotStatements,
        current: i16,
        slot: i16,
    ) -> Result<Rotation, StoreError> {
        let persistent = self.persistent();
        let mut tx = conn.begin().await.map_err(store_error)?;
        let locked = sqlx::query(statements.lock.clone())
            .persistent(persistent)
            .execute(&mut *tx)
            .await;
        match locked {
            Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("55P03") => {
                return Ok(Rotation::Busy { slot });
            }
            locked => locked.map_err(store_error)?,
        };
        let moved = sqlx::query(statements.moved.clone())
            .persistent(persistent)
            .bind(current)
            .execute(&mut *tx)
            .await
            .map_err(store_error)?
            .rows_affected();
        sqlx::query(statements.truncate.clone())
            .persistent(persistent)
            .execute(&mut *tx)
            .await
            .map_err(store_error)?;
        tx.commit().await.map_err(store_error)?;
        Ok(Rotation::Truncated { slot, moved })
    }
}
