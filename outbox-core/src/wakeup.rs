//! A hint that new work may be waiting, passed from a store's change feed
//! (Postgres `NOTIFY`, a Mongo change stream) to the relay.

use std::sync::Arc;

use tokio::sync::Notify;

/// Wakes a sleeping relay early. Clones share one signal. A hint only: the
/// relay polls anyway, so a lost wake-up costs latency, never an event.
#[derive(Debug, Clone, Default)]
pub struct Wakeup {
    notify: Arc<Notify>,
}

impl Wakeup {
    /// A fresh signal.
    pub fn new() -> Self {
        Self::default()
    }

    /// Wakes the waiter; if none waits, the next wait returns at once.
    pub fn wake(&self) {
        self.notify.notify_one();
    }

    /// Waits for the next wake-up.
    pub async fn notified(&self) {
        self.notify.notified().await;
    }
}
