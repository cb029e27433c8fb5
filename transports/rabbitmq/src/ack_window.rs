//! Acks sent together: a run of deliveries acked one after the other goes
//! to the broker as one `basic.ack` with `multiple` set.
//!
//! Such an ack settles every delivery of its channel up to its tag, so it
//! may only be sent for a run at the front of the channel's unsettled
//! deliveries: the earliest delivery still being handled bounds it. A nack
//! or reject is sent on its own at once, and its delivery leaves the window
//! only once the frame has gone, so no ack sent after it can cover it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use lapin::options::BasicAckOptions;
use tidings_core::AckError;
use tokio::sync::{Notify, watch};

/// The unsettled deliveries of one channel, by delivery tag, and the task
/// that sends their acks.
///
/// Every delivery yielded on the channel is entered, in tag order. An ack
/// marks its delivery and waits until the run at the front holding it has
/// been acked; an ack behind an unsettled delivery returns at once, and
/// goes out with that delivery's settlement. The task sends one ack per
/// run, so acks marked while one is on its way go together in the next.
#[derive(Debug, Clone)]
pub(crate) struct AckWindow {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    pending: Mutex<Pending<lapin::Acker>>,
    wake: Arc<Notify>,
    sent: watch::Sender<Sent>,
}

/// How far acks have gone out.
#[derive(Debug, Clone, Default)]
struct Sent {
    /// Every delivery up to this tag is acked.
    through: u64,
    /// Why the channel's acks stopped going out, once they have.
    broken: Option<Arc<str>>,
}

impl AckWindow {
    /// A window for a new channel, with its task.
    pub(crate) fn start() -> Self {
        let wake = Arc::new(Notify::new());
        let shared = Arc::new(Shared {
            pending: Mutex::default(),
            wake: Arc::clone(&wake),
            sent: watch::Sender::new(Sent::default()),
        });
        tokio::spawn(send_acks(Arc::downgrade(&shared), wake));
        Self { shared }
    }

    /// Enters a delivery yielded on the channel; tags must grow.
    pub(crate) fn enter(&self, tag: u64) {
        self.shared.lock().enter(tag);
    }

    /// Acks delivery `tag` with the ack it would have been sent with alone.
    pub(crate) async fn ack(&self, tag: u64, acker: lapin::Acker) -> Result<(), AckError> {
        if !acker.usable() {
            // The channel is gone: the broker redelivers the message.
            let _ = self.leave(tag).await;
            return Err(AckError::Expired);
        }
        let through = self.shared.lock().mark(tag, acker);
        self.wait_for(through).await
    }

    /// Removes delivery `tag` once it has been settled otherwise (nacked or
    /// rejected), and waits for the acks that it held back.
    pub(crate) async fn leave(&self, tag: u64) -> Result<(), AckError> {
        let through = self.shared.lock().remove(tag);
        self.wait_for(through).await
    }

    /// Waits until the deliveries up to `through`, if any, are acked.
    async fn wait_for(&self, through: Option<u64>) -> Result<(), AckError> {
        let Some(through) = through else {
            return Ok(());
        };
        let mut sent = self.shared.sent.subscribe();
        self.shared.wake.notify_one();
        let sent = sent
            .wait_for(|s| s.through >= through || s.broken.is_some())
            .await
            .map_err(|closed| AckError::Unavailable(closed.into()))?;
        match (&sent.broken, sent.through >= through) {
            (Some(why), false) => Err(AckError::Unavailable(why.to_string().into())),
            _ => Ok(()),
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Pending<lapin::Acker>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Acks each run at the front, one frame per run, until none is left.
    async fn flush(&self) {
        loop {
            let Some((through, acker)) = self.lock().take_front() else {
                return;
            };
            let sent = acker.ack(BasicAckOptions { multiple: true }).await;
            self.sent.send_modify(|s| match sent {
                Ok(true) => s.through = s.through.max(through),
                Ok(false) => s.broken = Some("the channel is closed".into()),
                Err(error) => s.broken = Some(error.to_string().into()),
            });
        }
    }
}

impl Drop for Shared {
    /// Sends what is still marked, and lets the task end.
    fn drop(&mut self) {
        self.wake.notify_one();
        let Some((_, acker)) = self.lock().take_front() else {
            return;
        };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { acker.ack(BasicAckOptions { multiple: true }).await });
        }
    }
}

/// Sends acks whenever woken, while the window lives.
async fn send_acks(shared: Weak<Shared>, wake: Arc<Notify>) {
    loop {
        wake.notified().await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        shared.flush().await;
    }
}

/// The bookkeeping of a window: each unsettled delivery by tag, with the
/// ack (`A`) it was marked with, if it was.
#[derive(Debug)]
struct Pending<A> {
    deliveries: BTreeMap<u64, Option<A>>,
}

impl<A> Default for Pending<A> {
    fn default() -> Self {
        Self {
            deliveries: BTreeMap::new(),
        }
    }
}

impl<A> Pending<A> {
    fn enter(&mut self, tag: u64) {
        self.deliveries.insert(tag, None);
    }

    /// Marks `tag` acked; returns the last tag of the run at the front
    /// when `tag` is in it.
    fn mark(&mut self, tag: u64, ack: A) -> Option<u64> {
        if let Some(slot) = self.deliveries.get_mut(&tag) {
            *slot = Some(ack);
        }
        self.front_run().filter(|last| *last >= tag)
    }

    /// Removes `tag`; returns the last tag of the run at the front when
    /// the removal let that run go.
    fn remove(&mut self, tag: u64) -> Option<u64> {
        let was_first = self.deliveries.keys().next() == Some(&tag);
        self.deliveries.remove(&tag);
        self.front_run().filter(|_| was_first)
    }

    /// The last tag of the run of marked deliveries at the front.
    fn front_run(&self) -> Option<u64> {
        self.deliveries
            .iter()
            .take_while(|(_, ack)| ack.is_some())
            .last()
            .map(|(tag, _)| *tag)
    }

    /// Takes the run at the front out: its last tag, with that delivery's
    /// ack, which sent with `multiple` settles the whole run.
    fn take_front(&mut self) -> Option<(u64, A)> {
        let mut last = None;
        while let Some(entry) = self.deliveries.first_entry() {
            if entry.get().is_none() {
                break;
            }
            let (tag, ack) = entry.remove_entry();
            last = ack.map(|ack| (tag, ack));
        }
        last
    }
}

#[cfg(test)]
mod tests {
    use super::Pending;

    fn window(tags: std::ops::RangeInclusive<u64>) -> Pending<u64> {
        let mut pending = Pending::default();
        tags.for_each(|tag| pending.enter(tag));
        pending
    }

    #[test]
    fn a_run_at_the_front_goes_as_one_ack_of_its_last_tag() {
        let mut pending = window(1..=5);
        assert_eq!(pending.mark(1, 1), Some(1));
        assert_eq!(pending.mark(2, 2), Some(2));
        assert_eq!(pending.mark(3, 3), Some(3));
        assert_eq!(pending.take_front(), Some((3, 3)));
        assert_eq!(pending.take_front(), None);
        assert_eq!(
            pending.deliveries.keys().copied().collect::<Vec<_>>(),
            [4, 5]
        );
    }

    #[test]
    fn acks_behind_an_unsettled_delivery_wait_for_it() {
        let mut pending = window(1..=4);
        assert_eq!(pending.mark(2, 2), None, "1 is still being handled");
        assert_eq!(pending.mark(4, 4), None);
        assert_eq!(pending.take_front(), None, "nothing may cover 1");
        assert_eq!(pending.mark(1, 1), Some(2), "1 lets 1 and 2 go");
        assert_eq!(pending.take_front(), Some((2, 2)));
        assert_eq!(pending.mark(3, 3), Some(4));
        assert_eq!(pending.take_front(), Some((4, 4)));
    }

    #[test]
    fn a_delivery_settled_otherwise_leaves_and_lets_the_run_behind_it_go() {
        let mut pending = window(1..=3);
        assert_eq!(pending.mark(2, 2), None);
        assert_eq!(pending.remove(3), None, "3 was not at the front");
        assert_eq!(pending.remove(1), Some(2), "1 was nacked, 2 may go");
        assert_eq!(pending.take_front(), Some((2, 2)));
        assert!(pending.deliveries.is_empty());
    }

    #[test]
    fn an_unknown_tag_changes_nothing() {
        let mut pending = window(1..=2);
        assert_eq!(pending.mark(9, 9), None);
        assert_eq!(pending.remove(7), None);
        assert_eq!(pending.deliveries.len(), 2);
        assert_eq!(pending.take_front(), None);
    }
}
