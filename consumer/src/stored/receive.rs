//! Receiving into the stored inbox: each batch of deliveries the source
//! has ready is staged in one transaction, then acked, so the broker is
//! freed before any handler runs.

use std::time::Duration;

use futures::future::join_all;
use futures::{Stream, StreamExt};
use tidings_core::port::error_chain;
use tidings_core::{
    Acker, Backoff, Delivery, Redelivery, SourceError, StageEvents, StagedEvent, StoreError, Wakeup,
};
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use crate::dispatch::StreamEnd;

/// Where received messages go: the store, the route they are stored
/// under, and who is woken once they are.
pub(super) struct Intake<'a, St> {
    pub(super) store: &'a St,
    pub(super) route: &'a str,
    pub(super) destination: &'a str,
    pub(super) wakeup: &'a Wakeup,
    pub(super) batch: usize,
}

/// Waits between tries of a batch the store could not take.
const STORE_BACKOFF: Backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(5));

impl<St: StageEvents> Intake<'_, St> {
    /// Stores what `stream` delivers until it ends or `cancel` fires.
    pub(super) async fn receive<A, S>(&self, stream: S, cancel: &CancellationToken) -> StreamEnd
    where
        A: Acker,
        S: Stream<Item = Result<Delivery<A>, SourceError>> + Unpin,
    {
        let mut chunks = stream.ready_chunks(self.batch);
        loop {
            let chunk = tokio::select! {
                () = cancel.cancelled() => return StreamEnd::Cancelled,
                chunk = chunks.next() => chunk,
            };
            let Some(chunk) = chunk else {
                return StreamEnd::Closed;
            };
            let mut deliveries = Vec::with_capacity(chunk.len());
            let mut failed = None;
            for item in chunk {
                match item {
                    Ok(delivery) => deliveries.push(delivery),
                    Err(e) => failed = Some(e),
                }
            }
            if !self.keep(deliveries, cancel).await {
                return StreamEnd::Cancelled;
            }
            if let Some(e) = failed {
                return StreamEnd::Failed(e);
            }
        }
    }

    /// Stores `deliveries` and acks them; false when shutdown came first,
    /// leaving them unsettled for the broker to deliver again.
    async fn keep<A: Acker>(
        &self,
        deliveries: Vec<Delivery<A>>,
        cancel: &CancellationToken,
    ) -> bool {
        if deliveries.is_empty() {
            return true;
        }
        let mut tries = 0;
        loop {
            // Made afresh for each try, rather than copied from the first.
            let events: Vec<StagedEvent> = deliveries.iter().map(|d| self.event(d)).collect();
            match self.store.stage_events(events).await {
                Ok(()) => break,
                // One event the store refuses must not hold back the rest.
                Err(StoreError::Invalid(why)) => {
                    debug!(error = %why, "a batch was refused; storing its messages one by one");
                    self.keep_each(deliveries).await;
                    self.wakeup.wake();
                    return true;
                }
                Err(e) => {
                    tries += 1;
                    let delay = STORE_BACKOFF.delay(tries);
                    warn!(error = %error_chain(&e), retry_in = ?delay, "storing received messages failed");
                    tokio::select! {
                        () = cancel.cancelled() => return false,
                        () = tokio::time::sleep(delay) => {}
                    }
                }
            }
        }
        self.wakeup.wake();
        let acks = deliveries.into_iter().map(|d| ack(d.into_parts().2));
        join_all(acks).await;
        true
    }

    /// Stores each delivery alone: the ones the store refuses are
    /// dead-lettered with why, the others acked once stored; one the store
    /// cannot take now is returned to the broker.
    async fn keep_each<A: Acker>(&self, deliveries: Vec<Delivery<A>>) {
        for delivery in deliveries {
            let event = self.event(&delivery);
            let acker = delivery.into_parts().2;
            let settled = match self.store.stage_events(vec![event]).await {
                Ok(()) => acker.ack().await,
                Err(StoreError::Invalid(why)) => {
                    acker.dead_letter(format!("cannot be stored: {why}")).await
                }
                Err(e) => {
                    warn!(error = %error_chain(&e), "storing a received message failed");
                    acker.nack(Redelivery::Now).await
                }
            };
            if let Err(e) = settled {
                warn!(error = %error_chain(&e), "settling a received message failed");
            }
        }
    }

    /// The event a delivery is stored as: under the stored inbox's route,
    /// its destination the queue where it had none.
    fn event<A: Acker>(&self, delivery: &Delivery<A>) -> StagedEvent {
        let mut envelope = delivery.envelope().clone();
        envelope.route = self.route.to_owned();
        if envelope.destination.is_empty() {
            envelope.destination = self.destination.to_owned();
        }
        envelope.attempts = 0;
        StagedEvent {
            envelope,
            delay: None,
        }
    }
}

async fn ack<A: Acker>(acker: A) {
    if let Err(e) = acker.ack().await {
        // Stored already: the broker delivers it again and the store skips
        // the id it holds.
        warn!(error = %error_chain(&e), "acking a stored message failed");
    }
}
