//! Settling one delivery: ack, requeue now or after a delay, dead-letter.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use lapin::options::{BasicNackOptions, BasicPublishOptions, BasicRejectOptions};
use lapin::types::{AMQPValue, FieldTable, LongString};
use lapin::{BasicProperties, Channel, Confirmation};
use tidings_core::port::{parked_at_now, truncate_reason};
use tidings_core::{
    AckError, Acker, FIRST_FAILURE_HEADER, PARKED_AT_HEADER, PARKED_DELIVERIES_HEADER,
    PublishError, Redelivery,
};

use crate::ack_window::AckWindow;
use crate::error::{ack_error, ack_publish_error, publish_error};
use crate::names::{dead_letter_exchange, delay_queue};
use crate::properties::{
    DEAD_LETTER_REASON_HEADER, PRIOR_DELIVERIES_HEADER, QUORUM_DELIVERY_COUNT,
};

/// The longest dead-letter reason kept in the header, in bytes.
const MAX_REASON_LEN: usize = 4096;

/// A nack of one delivery, which the broker puts back in its queue.
const REQUEUE: BasicNackOptions = BasicNackOptions {
    multiple: false,
    requeue: true,
};

/// What a settlement needs besides the delivery's acker.
#[derive(Debug)]
pub(crate) struct Received {
    pub(crate) tag: u64,
    /// The channel's unsettled deliveries, this one among them.
    pub(crate) window: AckWindow,
    pub(crate) queue: Arc<str>,
    pub(crate) properties: BasicProperties,
    pub(crate) body: Bytes,
    pub(crate) delivery_count: u32,
    pub(crate) confirm_timeout: Duration,
}

/// Settles one RabbitMQ delivery.
///
/// - `ack` acks it, together with the deliveries acked right before it
///   on the same channel: one ack with `multiple` set settles a run of
///   them, and never covers a delivery still being handled.
/// - `nack(Redelivery::Now)` nacks it with requeue; the broker puts it back
///   in the queue.
/// - `nack(Redelivery::After(delay))` republishes it, with a per-message
///   TTL of `delay`, to the queue's delay queue (see
///   [`delay_queue`](crate::delay_queue)), which dead-letters it back to the
///   queue when the TTL runs out, then acks the original. Messages in the
///   delay queue expire in order, so a message waits at least its own delay
///   and at most as long as the longest delay queued ahead of it. The
///   first such copy records the time in [`FIRST_FAILURE_HEADER`], and
///   every later copy keeps it.
/// - `dead_letter(reason)` republishes it to the queue's dead-letter
///   exchange with the reason in the [`DEAD_LETTER_REASON_HEADER`] header,
///   then acks the original. A plain reject could not carry the reason; if
///   the republish fails, the message is rejected without requeue instead,
///   and still lands in the dead-letter queue, with the broker's `x-death`
///   record but no reason. The copy also records the delivery count in
///   [`PARKED_DELIVERIES_HEADER`], the time in [`PARKED_AT_HEADER`], and
///   keeps [`FIRST_FAILURE_HEADER`] (set to now if no delayed retry set
///   it), so a dead-letter reader shows the acker's count, not the
///   broker's count of reads.
///
/// A republish is confirmed before the original is acked, so a crash in
/// between leaves a copy in both places, never in neither. Dropped
/// unsettled, the delivery is nacked with requeue. Every setting consumes
/// the acker, and the broker ties delivery tags to their channel: a
/// delivery received before a reconnect can never settle another message.
#[derive(Debug)]
pub struct RabbitAcker {
    channel: Channel,
    acker: Option<lapin::Acker>,
    received: Received,
}

impl RabbitAcker {
    /// Settles `acker`'s delivery, which it enters in its channel's window.
    pub(crate) fn new(channel: Channel, acker: lapin::Acker, received: Received) -> Self {
        received.window.enter(received.tag);
        Self {
            channel,
            acker: Some(acker),
            received,
        }
    }

    fn take(&mut self) -> Result<lapin::Acker, AckError> {
        self.acker.take().ok_or(AckError::Expired)
    }

    async fn ack_now(&mut self) -> Result<(), AckError> {
        let acker = self.take()?;
        let Received { tag, window, .. } = &self.received;
        window.ack(*tag, acker).await
    }

    async fn requeue(&mut self) -> Result<(), AckError> {
        let acker = self.take()?;
        let sent = acker.nack(REQUEUE).await;
        self.left(settled(sent)).await
    }

    async fn reject(&mut self) -> Result<(), AckError> {
        let acker = self.take()?;
        let sent = acker.reject(BasicRejectOptions { requeue: false }).await;
        self.left(settled(sent)).await
    }

    /// Takes the delivery out of the window once its nack or reject has
    /// gone, letting go the acks it held back.
    async fn left(&self, settled: Result<(), AckError>) -> Result<(), AckError> {
        let Received { tag, window, .. } = &self.received;
        let released = window.leave(*tag).await;
        settled.and(released)
    }

    /// Publishes a copy of the message and waits for its confirm.
    async fn republish(
        &self,
        exchange: &str,
        routing_key: &str,
        properties: BasicProperties,
    ) -> Result<(), PublishError> {
        let queue = &self.received.queue;
        let size = self.received.body.len();
        let options = BasicPublishOptions {
            mandatory: true,
            immediate: false,
        };
        let sent = self
            .channel
            .basic_publish(
                exchange.into(),
                routing_key.into(),
                options,
                &self.received.body,
                properties,
            )
            .await
            .map_err(|e| publish_error(e, queue, size))?;
        let confirm = tokio::time::timeout(self.received.confirm_timeout, sent)
            .await
            .map_err(|_| PublishError::Timeout)?
            .map_err(|e| publish_error(e, queue, size))?;
        match confirm {
            Confirmation::Ack(None) => Ok(()),
            Confirmation::Ack(Some(_)) | Confirmation::Nack(Some(_)) => {
                Err(PublishError::Unroutable {
                    destination: exchange.to_owned(),
                })
            }
            _ => Err(PublishError::Refused {
                reason: "the broker did not confirm the republished message".to_owned(),
            }),
        }
    }

    /// The original properties with the transport's counting headers
    /// replaced (the parking record included, which only the parked copy
    /// carries).
    fn copy_properties(&self, edit: impl FnOnce(&mut FieldTable)) -> BasicProperties {
        let mut headers = FieldTable::default();
        for (name, value) in self
            .received
            .properties
            .headers()
            .iter()
            .flat_map(|t| t.inner())
        {
            let name_str = name.as_str();
            if ![
                QUORUM_DELIVERY_COUNT,
                PRIOR_DELIVERIES_HEADER,
                PARKED_DELIVERIES_HEADER,
                PARKED_AT_HEADER,
            ]
            .contains(&name_str)
            {
                headers.insert(name.clone(), value.clone());
            }
        }
        edit(&mut headers);
        self.received.properties.clone().with_headers(headers)
    }

    async fn nack_after(&mut self, delay: Duration) -> Result<(), AckError> {
        let prior = self.received.delivery_count;
        let millis = delay.as_millis().max(1).to_string();
        let properties = self
            .copy_properties(|h| {
                put(h, PRIOR_DELIVERIES_HEADER, prior.to_string());
                first_failure(h, &parked_at_now());
            })
            .with_expiration(millis.as_str().into());
        let target = delay_queue(&self.received.queue);
        match self.republish("", &target, properties).await {
            Ok(()) => self.ack_now().await,
            Err(error) => {
                tracing::warn!(messaging.destination.name = %self.received.queue, error = %error, "delayed redelivery failed, requeueing now");
                self.requeue().await?;
                Err(ack_publish_error(error))
            }
        }
    }

    async fn dead_letter_with(&mut self, reason: &str) -> Result<(), AckError> {
        let reason = truncate_reason(reason, MAX_REASON_LEN);
        let deliveries = self.received.delivery_count;
        let properties = self.copy_properties(|h| park(h, reason, deliveries, &parked_at_now()));
        let queue = self.received.queue.clone();
        match self
            .republish(&dead_letter_exchange(&queue), &queue, properties)
            .await
        {
            Ok(()) => self.ack_now().await,
            Err(error) => {
                tracing::warn!(messaging.destination.name = %queue, error = %error, "republishing to the dead-letter exchange failed, rejecting instead");
                self.reject().await
            }
        }
    }
}

/// Writes the parking record on a parked copy's headers: the reason, the
/// deliveries so far, the time (`now`, ms since the epoch), and the first
/// failure's time, kept if a delayed retry recorded it.
fn park(headers: &mut FieldTable, reason: &str, deliveries: u32, now: &str) {
    put(headers, DEAD_LETTER_REASON_HEADER, reason);
    put(headers, PARKED_DELIVERIES_HEADER, deliveries.to_string());
    put(headers, PARKED_AT_HEADER, now);
    first_failure(headers, now);
}

/// Records `now` as the first failure's time unless one is recorded.
fn first_failure(headers: &mut FieldTable, now: &str) {
    if !headers.contains_key(FIRST_FAILURE_HEADER) {
        put(headers, FIRST_FAILURE_HEADER, now);
    }
}

fn put(headers: &mut FieldTable, name: &str, value: impl Into<String>) {
    let value: String = value.into();
    headers.insert(name.into(), AMQPValue::LongString(LongString::from(value)));
}

/// Maps lapin's answer: `Ok(false)` means the channel is gone or the
/// delivery was settled already.
fn settled(result: Result<bool, lapin::Error>) -> Result<(), AckError> {
    match result {
        Ok(true) => Ok(()),
        Ok(false) => Err(AckError::Expired),
        Err(error) => Err(ack_error(error)),
    }
}

impl Acker for RabbitAcker {
    async fn ack(mut self) -> Result<(), AckError> {
        self.ack_now().await
    }

    async fn nack(mut self, redelivery: Redelivery) -> Result<(), AckError> {
        match redelivery {
            Redelivery::After(delay) if !delay.is_zero() => self.nack_after(delay).await,
            _ => self.requeue().await,
        }
    }

    async fn dead_letter(mut self, reason: String) -> Result<(), AckError> {
        self.dead_letter_with(&reason).await
    }
}

impl Drop for RabbitAcker {
    fn drop(&mut self) {
        let Some(acker) = self.acker.take() else {
            return;
        };
        let (tag, window) = (self.received.tag, self.received.window.clone());
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = acker.nack(REQUEUE).await;
                let _ = window.leave(tag).await;
            });
        }
    }
}

/// Dead-letters a message that does not form an envelope.
pub(crate) async fn dead_letter_unreadable(mut acker: RabbitAcker, reason: &str) {
    if let Err(error) = acker.dead_letter_with(reason).await {
        tracing::error!(messaging.destination.name = %acker.received.queue, error = %error, "cannot dead-letter an unreadable message");
    }
}

#[cfg(test)]
mod tests {
    use lapin::types::{AMQPValue, FieldTable, LongString};
    use tidings_core::{
        DEAD_LETTER_REASON_HEADER, FIRST_FAILURE_HEADER, PARKED_AT_HEADER, PARKED_DELIVERIES_HEADER,
    };

    fn get(headers: &FieldTable, name: &str) -> Option<String> {
        match headers.inner().get(name)? {
            AMQPValue::LongString(s) => Some(String::from_utf8_lossy(s.as_bytes()).into_owned()),
            _ => None,
        }
    }

    #[test]
    fn a_parked_copy_records_count_time_and_first_failure() {
        let mut headers = FieldTable::default();
        super::park(&mut headers, "bad total", 3, "1700000000000");
        assert_eq!(
            get(&headers, DEAD_LETTER_REASON_HEADER).unwrap(),
            "bad total"
        );
        assert_eq!(get(&headers, PARKED_DELIVERIES_HEADER).unwrap(), "3");
        assert_eq!(get(&headers, PARKED_AT_HEADER).unwrap(), "1700000000000");
        assert_eq!(
            get(&headers, FIRST_FAILURE_HEADER).unwrap(),
            "1700000000000"
        );
    }

    #[test]
    fn the_first_failure_of_a_delayed_retry_is_kept() {
        let mut headers = FieldTable::default();
        headers.insert(
            FIRST_FAILURE_HEADER.into(),
            AMQPValue::LongString(LongString::from("1600000000000")),
        );
        super::first_failure(&mut headers, "1650000000000");
        super::park(&mut headers, "gave up", 5, "1700000000000");
        assert_eq!(
            get(&headers, FIRST_FAILURE_HEADER).unwrap(),
            "1600000000000"
        );
    }
}
