//! Several ready deliveries in one inbox transaction: one commit for all
//! of them, and the one-at-a-time path whenever anything goes wrong.

use futures::future::join_all;
use tidings_core::port::error_chain;
use tidings_core::telemetry;
use tidings_core::{Acker, Delivery, Envelope, InboxMark};
use tracing::Instrument;

use crate::parts::Parts;
use crate::process::{Pipeline, Verdict};
use crate::report::Count;

/// A delivery taken into a batch: decoded, and a first delivery where
/// `max_deliveries` is set.
struct Item<T, A> {
    envelope: Envelope,
    count: Option<u32>,
    /// Decoded on admission and moved into the handler.
    payload: Option<T>,
    acker: A,
}

impl<T, A: Acker> Item<T, A> {
    fn new(delivery: Delivery<A>, payload: T) -> Self {
        let (envelope, count, acker) = delivery.into_parts();
        Self {
            envelope,
            count,
            payload: Some(payload),
            acker,
        }
    }

    /// The delivery again, for the one-at-a-time path, which decodes it
    /// afresh.
    fn into_delivery(self) -> Delivery<A> {
        Delivery::new(self.envelope, self.count, self.acker)
    }
}

impl<P: Parts> Pipeline<P> {
    /// Runs `deliveries` in order, sharing one transaction where they can.
    ///
    /// Deliveries that will be dead-lettered (undecodable) and, with
    /// `max_deliveries`, redeliveries go the one-at-a-time way first. The rest are
    /// marked and handled in one transaction, committed once and then
    /// acked. If a handler fails or the commit does, the transaction is
    /// rolled back, taking every mark and write with it, and each delivery
    /// runs again on its own with the usual retries.
    pub(crate) async fn process_batch<A: Acker>(&self, deliveries: Vec<Delivery<A>>) {
        if deliveries.len() <= 1 {
            for delivery in deliveries {
                self.process(delivery).await;
            }
            return;
        }
        let mut items = Vec::with_capacity(deliveries.len());
        for delivery in deliveries {
            match self.batchable(&delivery) {
                Some(payload) => items.push(Item::new(delivery, payload)),
                None => self.process(delivery).await,
            }
        }
        if items.len() <= 1 {
            for item in items {
                self.process(item.into_delivery()).await;
            }
            return;
        }
        let envelopes: Vec<&Envelope> = items.iter().map(|item| &item.envelope).collect();
        let span = telemetry::process_span(
            self.system,
            self.queue.name(),
            self.inbox.consumer(),
            &envelopes,
            None,
        );
        async move {
            let turn = self.isolation.shared().await;
            let together = self.handle_together(&mut items).await;
            drop(turn);
            match together {
                Ok(verdicts) => {
                    let batched = verdicts.len() as u64;
                    self.counters.add(Count::Batched, batched);
                    let settles = items
                        .into_iter()
                        .zip(verdicts)
                        .map(|(item, verdict)| self.settle(verdict, item.acker));
                    join_all(settles).await;
                }
                Err(reason) => {
                    tracing::info!(%reason, size = items.len(), "batch rolled back; handling its deliveries one at a time");
                    for item in items {
                        self.process(item.into_delivery()).await;
                    }
                }
            }
        }
        .instrument(span)
        .await
    }

    /// The payload of a delivery that can join a batch; `None` leaves it
    /// to the one-at-a-time path. With `max_deliveries`, only first
    /// deliveries join: a redelivery has its attempt counted on that path,
    /// and is dead-lettered there when it has had enough. An expired
    /// delivery takes that path too, to be parked or skipped, as does one
    /// of an unknown type.
    fn batchable<A: Acker>(&self, delivery: &Delivery<A>) -> Option<P::Payload> {
        let envelope = delivery.envelope();
        if envelope.is_expired(std::time::SystemTime::now()) {
            return None;
        }
        // An unknown type takes the one-at-a-time path to be parked or
        // skipped; a type at an isolation level of its own runs in a
        // transaction of its own.
        if self.unknown_type_of(envelope)
            || self.options_for(envelope).isolation != self.options.isolation
        {
            return None;
        }
        if let Some(max) = self.options.max_deliveries {
            if delivery.delivery_count() != Some(1) || max == 0 {
                return None;
            }
        }
        self.queue.decode(&delivery.envelope().payload).ok()
    }

    /// Marks and handles every item in one transaction and commits it.
    async fn handle_together<A: Acker>(
        &self,
        items: &mut [Item<P::Payload, A>],
    ) -> Result<Vec<Verdict>, String> {
        let mut tx = self
            .inbox
            .open_at(self.options.isolation)
            .await
            .map_err(|e| error_chain(&e))?;
        let mut verdicts = Vec::with_capacity(items.len());
        for item in items.iter_mut() {
            match self.inbox.mark(&mut tx, item.envelope.event_id).await {
                Ok(InboxMark::Duplicate) => {
                    verdicts.push(Verdict::Duplicate);
                    continue;
                }
                Ok(InboxMark::Fresh(())) => {}
                Err(e) => {
                    self.rollback(tx).await;
                    return Err(format!("inbox mark failed: {}", error_chain(&e)));
                }
            }
            self.observe_clock(&item.envelope);
            let Some(payload) = item.payload.take() else {
                self.rollback(tx).await;
                return Err("a payload was handled already".to_owned());
            };
            let span =
                tracing::info_span!("handle", messaging.message.id = %item.envelope.event_id);
            tx = self
                .handle_in(tx, &item.envelope, item.count, payload)
                .instrument(span)
                .await
                .map_err(|error| format!("handler failed: {error}"))?;
            verdicts.push(Verdict::Done);
        }
        self.inbox
            .commit(tx)
            .await
            .map_err(|e| format!("commit failed: {}", error_chain(&e)))?;
        Ok(verdicts)
    }
}
