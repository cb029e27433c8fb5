//! Consuming from the in-memory broker: its subscriptions, their streams
//! and the acker of each delivery.

use std::time::Duration;

use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use tokio::time::Instant;

use super::broker::{BrokerState, MEMORY_SYSTEM, MemoryBroker, Stored};
use crate::cloudevents::from_attributes;
use crate::port::parked_at_now;
use crate::{
    AckError, Acker, DEAD_LETTER_REASON_HEADER, Delivery, FIRST_FAILURE_HEADER, PARKED_AT_HEADER,
    PARKED_DELIVERIES_HEADER, Redelivery, Source, SourceError,
};

/// The headers the acker records its delivery bookkeeping in, which a
/// handler is not handed.
const BOOKKEEPING: [&str; 3] = [
    PARKED_DELIVERIES_HEADER,
    PARKED_AT_HEADER,
    FIRST_FAILURE_HEADER,
];

/// How long a waiting stream sleeps before looking again, should a wake-up
/// be missed.
const IDLE_RECHECK: Duration = Duration::from_millis(100);

impl Source for MemoryBroker {
    type Acker = MemoryAcker;
    type Stream = MemoryStream;

    async fn subscribe(&self, queue: &str) -> Result<MemoryStream, SourceError> {
        if !self.lock().queues.contains_key(queue) {
            return Err(SourceError::NotFound {
                queue: queue.to_owned(),
            });
        }
        Ok(MemoryStream::new(self.clone(), queue.to_owned()))
    }

    fn messaging_system(&self) -> &'static str {
        MEMORY_SYSTEM
    }
}

/// Deliveries from one queue of a [`MemoryBroker`].
pub struct MemoryStream {
    inner: BoxStream<'static, Result<Delivery<MemoryAcker>, SourceError>>,
}

impl std::fmt::Debug for MemoryStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MemoryStream")
    }
}

impl MemoryStream {
    pub(super) fn new(broker: MemoryBroker, queue: String) -> Self {
        let inner = futures::stream::unfold((broker, queue), |(broker, queue)| async move {
            let delivery = next_delivery(&broker, &queue).await?;
            Some((Ok(delivery), (broker, queue)))
        });
        Self {
            inner: inner.boxed(),
        }
    }
}

impl Stream for MemoryStream {
    type Item = Result<Delivery<MemoryAcker>, SourceError>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        self.inner.poll_next_unpin(cx)
    }
}

async fn next_delivery(broker: &MemoryBroker, queue: &str) -> Option<Delivery<MemoryAcker>> {
    loop {
        let notified = broker.inner.notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let next_due = {
            let mut state = broker.lock();
            let q = state.queues.get_mut(queue)?;
            let next_due = q.promote_due(Instant::now());
            if let Some(delivery) = take_ready(broker, &mut state, queue) {
                return Some(delivery);
            }
            next_due
        };
        let wake_at = next_due
            .unwrap_or_else(|| Instant::now() + IDLE_RECHECK)
            .min(Instant::now() + IDLE_RECHECK);
        tokio::select! {
            () = &mut notified => {}
            () = tokio::time::sleep_until(wake_at) => {}
        }
    }
}

/// Pops ready messages until one forms an envelope; those that do not are
/// dead-lettered with the reason.
fn take_ready(
    broker: &MemoryBroker,
    state: &mut BrokerState,
    queue: &str,
) -> Option<Delivery<MemoryAcker>> {
    loop {
        let q = state.queues.get_mut(queue)?;
        let mut stored = q.ready.pop_front()?;
        stored.deliveries += 1;
        let attrs = stored
            .attributes
            .iter()
            .filter(|(k, _)| !BOOKKEEPING.contains(&k.as_str()))
            .map(|(k, v)| (k.as_str(), v.as_str()));
        match from_attributes(attrs, stored.payload.clone()) {
            Ok(envelope) => {
                let count = stored.deliveries;
                state.next_tag += 1;
                let tag = state.next_tag;
                state.queues.get_mut(queue)?.unacked.insert(tag, stored);
                let acker = MemoryAcker {
                    broker: broker.clone(),
                    queue: queue.to_owned(),
                    tag,
                    settled: false,
                };
                return Some(Delivery::new(envelope, Some(count), acker));
            }
            Err(e) => {
                tracing::warn!(messaging.destination.name = queue, error = %e, "dead-lettering a message that is not an envelope");
                let dead_letter = q.dead_letter.clone();
                dead_letter_into(state, dead_letter, stored, &e.to_string());
            }
        }
    }
}

/// Parks `stored` in `dead_letter` with the reason and the parking record:
/// the deliveries it had, the time, and the time of its first failure
/// (kept if a delayed retry recorded it).
fn dead_letter_into(
    state: &mut BrokerState,
    dead_letter: Option<String>,
    mut stored: Stored,
    reason: &str,
) {
    let now = parked_at_now();
    let attributes = &mut stored.attributes;
    attributes.insert(DEAD_LETTER_REASON_HEADER.to_owned(), reason.to_owned());
    attributes.insert(
        PARKED_DELIVERIES_HEADER.to_owned(),
        stored.deliveries.to_string(),
    );
    attributes.insert(PARKED_AT_HEADER.to_owned(), now.clone());
    attributes
        .entry(FIRST_FAILURE_HEADER.to_owned())
        .or_insert(now);
    stored.deliveries = 0;
    if let Some(dlq) = dead_letter.and_then(|name| state.queues.get_mut(&name)) {
        dlq.ready.push_back(stored);
    }
}

/// Settles one delivery of a [`MemoryBroker`]. Dropped unsettled, it
/// returns the message to the queue, as a closed channel would.
#[derive(Debug)]
pub struct MemoryAcker {
    broker: MemoryBroker,
    queue: String,
    tag: u64,
    settled: bool,
}

impl MemoryAcker {
    fn settle(
        &mut self,
        then: impl FnOnce(&mut BrokerState, Option<String>, Stored),
    ) -> Result<(), AckError> {
        self.settled = true;
        let mut state = self.broker.lock();
        let q = state.queues.get_mut(&self.queue).ok_or(AckError::Expired)?;
        let stored = q.unacked.remove(&self.tag).ok_or(AckError::Expired)?;
        let dead_letter = q.dead_letter.clone();
        then(&mut state, dead_letter, stored);
        drop(state);
        self.broker.inner.notify.notify_waiters();
        Ok(())
    }

    fn requeue(&mut self, queue: String, at: Option<Instant>) -> Result<(), AckError> {
        self.settle(move |state, _, mut stored| {
            if let Some(q) = state.queues.get_mut(&queue) {
                match at {
                    Some(at) => {
                        // A delayed retry records when the failures began.
                        stored
                            .attributes
                            .entry(FIRST_FAILURE_HEADER.to_owned())
                            .or_insert_with(parked_at_now);
                        q.delayed.push((at, stored));
                    }
                    None => q.ready.push_back(stored),
                }
            }
        })
    }
}

impl Acker for MemoryAcker {
    async fn ack(mut self) -> Result<(), AckError> {
        self.settle(|_, _, _| {})
    }

    async fn nack(mut self, redelivery: Redelivery) -> Result<(), AckError> {
        let at = match redelivery {
            Redelivery::Now => None,
            Redelivery::After(delay) => Some(Instant::now() + delay),
        };
        self.requeue(self.queue.clone(), at)
    }

    async fn dead_letter(mut self, reason: String) -> Result<(), AckError> {
        self.settle(|state, dead_letter, stored| {
            dead_letter_into(state, dead_letter, stored, &reason)
        })
    }
}

impl Drop for MemoryAcker {
    fn drop(&mut self) {
        if !self.settled {
            let _ = self.requeue(self.queue.clone(), None);
        }
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use futures::StreamExt;

    use super::*;
    use crate::{Envelope, PublisherExt, Source};

    fn parked(broker: &MemoryBroker, dlq: &str) -> std::collections::BTreeMap<String, String> {
        let state = broker.lock();
        state.queues[dlq].ready[0].attributes.clone()
    }

    #[tokio::test]
    async fn a_parked_message_records_its_deliveries_and_first_failure() {
        let broker = MemoryBroker::new();
        let dlq = broker.declare_queue("orders");
        let envelope = Envelope::new("r", "orders", "order.placed", Bytes::new(), "text/plain");
        broker.publish(&envelope).await.unwrap();
        let mut stream = broker.subscribe("orders").await.unwrap();

        let (_, _, first) = stream.next().await.unwrap().unwrap().into_parts();
        let retry = Redelivery::After(Duration::from_millis(5));
        first.nack(retry).await.unwrap();
        let (envelope, count, second) = stream.next().await.unwrap().unwrap().into_parts();
        assert_eq!(count, Some(2));
        assert!(
            !envelope.headers.contains_key(FIRST_FAILURE_HEADER),
            "a handler was handed the acker's bookkeeping"
        );
        second.dead_letter("gave up".into()).await.unwrap();

        let record = parked(&broker, &dlq);
        assert_eq!(record[DEAD_LETTER_REASON_HEADER], "gave up");
        assert_eq!(record[PARKED_DELIVERIES_HEADER], "2");
        let at: u128 = record[PARKED_AT_HEADER].parse().unwrap();
        let first_failure: u128 = record[FIRST_FAILURE_HEADER].parse().unwrap();
        assert!(first_failure <= at, "{first_failure} after {at}");
    }
}
