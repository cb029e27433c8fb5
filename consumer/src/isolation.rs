//! Suspects run alone: a message whose handler was running when an earlier
//! process died holds the consumer to itself on its next start.
//!
//! A process that dies takes every handler running in it down, and each of
//! those attempts is left counted as started and never finished. Counted
//! that way, a message that kills its process once per delivery drags the
//! neighbours that happen to run beside it towards `max_deliveries` with
//! it, and a neighbour that is unlucky twice is parked though it never
//! failed. So a delivery with an unfinished attempt behind it, a suspect,
//! waits until no other handler of the consumer runs, and runs with none
//! beside it. If the process dies then, the suspect was the cause.
//!
//! A message thus collects at most one unfinished attempt while sharing the
//! process: every later start is alone, and only its own crashes count
//! against it. Suspects are rare (one per handler running at a crash) and
//! each runs once alone before it either commits or proves itself the
//! cause, so the consumer's throughput drops only briefly after a crash.
//!
//! The scope is one consumer: handlers of another consumer in the same
//! process may still run beside a suspect.

use tokio::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// The turn every handler run takes: shared by ordinary deliveries,
/// exclusive for a suspect.
#[derive(Debug, Default)]
pub(crate) struct Isolation {
    turns: RwLock<()>,
}

/// A handler run's turn, held until its attempt ends.
#[derive(Debug)]
#[must_use = "the turn ends when dropped"]
pub(crate) enum Turn<'a> {
    /// Beside other ordinary deliveries.
    Shared { _guard: RwLockReadGuard<'a, ()> },
    /// With no other handler running.
    Alone { _guard: RwLockWriteGuard<'a, ()> },
}

impl Isolation {
    /// A turn beside others; waits while a suspect runs or waits to.
    pub(crate) async fn shared(&self) -> Turn<'_> {
        Turn::Shared {
            _guard: self.turns.read().await,
        }
    }

    /// The consumer to one suspect: waits for running handlers to end, and
    /// holds new ones off until the turn is dropped.
    pub(crate) async fn alone(&self) -> Turn<'_> {
        Turn::Alone {
            _guard: self.turns.write().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_suspect_waits_for_shared_turns_and_holds_new_ones_off() {
        let isolation = Isolation::default();
        let running = isolation.shared().await;
        let alone = isolation.alone();
        tokio::pin!(alone);
        let waited = tokio::time::timeout(Duration::from_millis(20), &mut alone).await;
        assert!(waited.is_err(), "a suspect waits for the running handler");
        drop(running);
        let alone = alone.await;
        assert!(matches!(alone, Turn::Alone { .. }));
        let next = tokio::time::timeout(Duration::from_millis(20), isolation.shared()).await;
        assert!(next.is_err(), "nothing starts beside a suspect");
        drop(alone);
        assert!(matches!(isolation.shared().await, Turn::Shared { .. }));
    }
}
