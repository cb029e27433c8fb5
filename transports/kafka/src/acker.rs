//! Settling a delivery: ack by moving the committable offset, nack by
//! republishing to the retry topic, dead-letter by republishing to the
//! dead-letter topic.
//!
//! A log has no per-record nack: the only way to see a record again later
//! without stopping its partition is a copy. So a nack writes the record,
//! unchanged but for the transport's `x-tidings-*` headers (its delivery
//! count and when it is due), to the topic's retry topic, and only once the
//! brokers acknowledged the copy does the original count as settled. A
//! crash between the two leaves both (a duplicate the inbox absorbs), never
//! neither. Dead-lettering works the same way, with the reason in
//! `x-dead-letter-reason`.

use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use tidings_core::{
    AckError, Acker, DEAD_LETTER_REASON_HEADER, FIRST_FAILURE_HEADER, PARKED_AT_HEADER,
    PARKED_DELIVERIES_HEADER, Redelivery,
};

use crate::error::ack_error;
use crate::offsets::{Offsets, Ticket};
use crate::producer::{Outgoing, Producer};
use crate::record::{ORIGIN_HEADER, PRIOR_DELIVERIES_HEADER, RETRY_AT_HEADER, Record, unix_millis};

/// What every acker of one stream shares.
#[derive(Debug)]
pub(crate) struct Settling {
    pub(crate) offsets: Arc<Mutex<Offsets>>,
    pub(crate) producer: Producer,
    pub(crate) retry_topic: String,
    pub(crate) dead_letter_topic: String,
}

impl Settling {
    /// Republishes `record` to `topic` with `extra` headers.
    async fn republish(
        &self,
        record: &Record,
        topic: &str,
        extra: &[(&str, String)],
    ) -> Result<(), AckError> {
        let headers = record.headers_with(extra);
        let header_bytes: usize = record
            .headers
            .iter()
            .map(|(n, v)| n.len() + v.as_ref().map_or(0, Vec::len))
            .sum();
        let outgoing = Outgoing {
            topic,
            key: record.key.as_deref(),
            payload: &record.payload,
            headers,
            size: record.payload.len() + record.key.as_ref().map_or(0, Vec::len) + header_bytes,
        };
        self.producer.send(outgoing).await.map_err(ack_error)
    }

    /// Parks `record` in the dead-letter topic with `reason`, the number
    /// of deliveries it had, when it was parked and when it first failed
    /// (now, when it never failed before).
    pub(crate) async fn dead_letter(
        &self,
        record: &Record,
        deliveries: u32,
        reason: &str,
    ) -> Result<(), AckError> {
        let origin = format!("{}/{}/{}", record.topic, record.partition, record.offset);
        let now = SystemTime::now();
        let extra = [
            (DEAD_LETTER_REASON_HEADER, reason.to_owned()),
            (ORIGIN_HEADER, origin),
            (PRIOR_DELIVERIES_HEADER, deliveries.to_string()),
            (PARKED_DELIVERIES_HEADER, deliveries.to_string()),
            (PARKED_AT_HEADER, unix_millis(now)),
            (FIRST_FAILURE_HEADER, first_failure(record, now)),
        ];
        self.republish(record, &self.dead_letter_topic, &extra)
            .await
    }

    /// Marks the record of `ticket` settled.
    pub(crate) fn settle(&self, ticket: &Ticket) {
        if !self.offsets.lock().expect("offsets").settle(ticket) {
            tracing::debug!(
                messaging.destination.name = %ticket.partition.0,
                partition = ticket.partition.1,
                offset = ticket.offset,
                "settled after its partition was revoked; its next owner redelivers it"
            );
        }
    }
}

/// Settles one Kafka delivery. Dropping it unsettled leaves the record
/// uncommitted, so the group delivers it again after a restart or
/// rebalance.
#[derive(Debug)]
pub struct KafkaAcker {
    pending: Option<Pending>,
}

#[derive(Debug)]
struct Pending {
    ticket: Ticket,
    record: Record,
    deliveries: u32,
    settling: Arc<Settling>,
}

impl KafkaAcker {
    pub(crate) fn new(
        ticket: Ticket,
        record: Record,
        deliveries: u32,
        settling: Arc<Settling>,
    ) -> Self {
        Self {
            pending: Some(Pending {
                ticket,
                record,
                deliveries,
                settling,
            }),
        }
    }

    fn take(&mut self) -> Pending {
        self.pending.take().expect("an acker settles once")
    }
}

impl Drop for KafkaAcker {
    /// An abandoned delivery stays uncommitted but is no longer waited for
    /// when its partition is revoked.
    fn drop(&mut self) {
        if let Some(pending) = self.pending.take() {
            pending
                .settling
                .offsets
                .lock()
                .expect("offsets")
                .hold(&pending.ticket);
        }
    }
}

impl Acker for KafkaAcker {
    async fn ack(mut self) -> Result<(), AckError> {
        let pending = self.take();
        pending.settling.settle(&pending.ticket);
        Ok(())
    }

    async fn nack(mut self, redelivery: Redelivery) -> Result<(), AckError> {
        let pending = self.take();
        let due = match redelivery {
            Redelivery::Now => SystemTime::now(),
            Redelivery::After(delay) => SystemTime::now() + delay,
        };
        let extra = [
            (PRIOR_DELIVERIES_HEADER, pending.deliveries.to_string()),
            (RETRY_AT_HEADER, unix_millis(due)),
            (
                FIRST_FAILURE_HEADER,
                first_failure(&pending.record, SystemTime::now()),
            ),
        ];
        let settling = &pending.settling;
        let result = settling
            .republish(&pending.record, &settling.retry_topic, &extra)
            .await;
        finish(pending, result)
    }

    async fn dead_letter(mut self, reason: String) -> Result<(), AckError> {
        let pending = self.take();
        let result = pending
            .settling
            .dead_letter(&pending.record, pending.deliveries, &reason)
            .await;
        finish(pending, result)
    }
}

/// When `record` first failed, as a header value: the time an earlier
/// retry recorded, else `now`.
fn first_failure(record: &Record, now: SystemTime) -> String {
    match record.control_headers().first_failure {
        Some(ms) => ms.to_string(),
        None => unix_millis(now),
    }
}

/// Settles after a successful republish; after a failed one, leaves the
/// record unsettled (abandoned), so it is delivered again.
fn finish(pending: Pending, result: Result<(), AckError>) -> Result<(), AckError> {
    match result {
        Ok(()) => pending.settling.settle(&pending.ticket),
        Err(_) => pending
            .settling
            .offsets
            .lock()
            .expect("offsets")
            .hold(&pending.ticket),
    }
    result
}
