//! Word from a publisher that a batch is on its way to the broker.
//!
//! A relay may start publishing its next batch before the broker has
//! answered for the one before, as long as the earlier batch's messages
//! are ahead of the later one's on their way: queued on the connection in
//! batch order, where the broker takes them in that order. A publisher says
//! so by dropping the batch's [`Queued`] token; the relay waits for that on
//! the matching [`QueuedWait`].

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::channel::oneshot;

/// A token held while a batch's messages are not all queued on their way
/// to the broker. Clones share it: the batch counts as queued once the last
/// clone is dropped, so a publisher that sends over several channels gives
/// each channel a clone.
///
/// ```
/// use tidings_core::Queued;
///
/// # futures::executor::block_on(async {
/// let (queued, wait) = Queued::new();
/// let per_channel = [queued.clone(), queued];
/// drop(per_channel);
/// wait.await; // resolves: every clone is gone
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct Queued {
    _held: Arc<oneshot::Sender<()>>,
}

impl Queued {
    /// A token and the future that resolves once it and all its clones are
    /// dropped.
    pub fn new() -> (Self, QueuedWait) {
        let (sender, receiver) = oneshot::channel();
        let held = Arc::new(sender);
        (Self { _held: held }, QueuedWait(receiver))
    }
}

/// Resolves once the matching [`Queued`] token and all its clones are
/// dropped.
#[derive(Debug)]
#[must_use = "a wait does nothing unless awaited"]
pub struct QueuedWait(oneshot::Receiver<()>);

impl Future for QueuedWait {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // Nothing is ever sent: the sender's drop is the signal.
        Pin::new(&mut self.0).poll(cx).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use futures::FutureExt;

    use super::*;

    #[test]
    fn the_wait_ends_with_the_last_clone() {
        let (queued, mut wait) = Queued::new();
        let other = queued.clone();
        drop(queued);
        assert!((&mut wait).now_or_never().is_none(), "a clone is held");
        drop(other);
        assert!(wait.now_or_never().is_some());
    }
}
