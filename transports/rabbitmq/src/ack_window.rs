//! Acks sent together: a run of deliveries acked one after the other goes
//! to the broker as one `basic.ack` with `multiple` set.
//!
//! Such an ack settles every delivery of its channel up to its tag, so it
//! may only be sent for a run at the front of the channel's unsettled
//! deliveries: the earliest delivery still being handled bounds it. Acks
//! held back behind it go out one by one once they fill half the prefetch,
//! so a slow handler never stalls the channel. A nack or reject is sent on
//! its own at once, and its delivery leaves the window only once the frame
//! has gone, so no ack sent after it can cover it.

use std::sync::{Arc, Mutex, MutexGuard, Weak};

use lapin::options::BasicAckOptions;
use tidings_core::AckError;
use tokio::sync::{Notify, watch};

use crate::pending_acks::Pending;

/// The unsettled deliveries of one channel, by delivery tag, and the task
/// that sends their acks.
///
/// Every delivery yielded on the channel is entered, in tag order. An ack
/// marks its delivery and waits until the run at the front holding it has
/// been acked; an ack behind an unsettled delivery returns at once, and
/// goes out with that delivery's settlement, or alone once such acks fill
/// half the prefetch. The task sends every ack, one per run, so acks
/// marked while one is on its way go together in the next.
#[derive(Debug, Clone)]
pub(crate) struct AckWindow {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    pending: Mutex<Pending<lapin::Acker>>,
    /// How many acks held back behind an unsettled delivery send them
    /// out one by one.
    held_back_limit: usize,
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
    /// A window for a new channel with a prefetch of `prefetch`, and its
    /// task.
    pub(crate) fn start(prefetch: u16) -> Self {
        let wake = Arc::new(Notify::new());
        let shared = Arc::new(Shared {
            pending: Mutex::default(),
            held_back_limit: usize::from(prefetch / 2).max(1),
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

    /// Acks delivery `tag`; its lapin `acker` sends the frame if the
    /// delivery ends the run that goes out next.
    pub(crate) async fn ack(&self, tag: u64, acker: lapin::Acker) -> Result<(), AckError> {
        if !acker.usable() {
            // The channel is gone: the broker redelivers the message.
            let _ = self.leave(tag).await;
            return Err(AckError::Expired);
        }
        let through = self.shared.lock().mark(tag, acker);
        if through.is_none() {
            // Held back; the task sends it alone if too many are.
            self.shared.wake.notify_one();
        }
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

    /// Acks each run at the front, one frame per run, and the acks held
    /// back past the limit one by one, until nothing is left to send.
    async fn flush(&self) {
        loop {
            let (front, alone) = {
                let mut pending = self.lock();
                let front = pending.take_front();
                (front, pending.take_held_back(self.held_back_limit))
            };
            if front.is_none() && alone.is_empty() {
                return;
            }
            if let Some((through, acker)) = front {
                let sent = acker.ack(BasicAckOptions { multiple: true }).await;
                self.sent.send_modify(|s| match sent {
                    Ok(true) => s.through = s.through.max(through),
                    Ok(false) => s.broken = Some("the channel is closed".into()),
                    Err(error) => s.broken = Some(error.to_string().into()),
                });
            }
            for acker in alone {
                // Its caller has returned; a lost ack only means the broker
                // redelivers.
                let _ = acker.ack(BasicAckOptions::default()).await;
            }
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
