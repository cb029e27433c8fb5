//! Settling one delivery: ack, requeue now or after a delay, dead-letter.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use lapin::options::{BasicNackOptions, BasicPublishOptions, BasicRejectOptions};
use lapin::types::{AMQPValue, FieldTable, LongString};
use lapin::{BasicProperties, Channel, Confirmation};
use tidings_core::{AckError, Acker, PublishError, Redelivery};

use crate::ack_window::AckWindow;
use crate::error::{ack_error, ack_publish_error, publish_error};
use crate::properties::{
    DEAD_LETTER_REASON_HEADER, PRIOR_DELIVERIES_HEADER, QUORUM_DELIVERY_COUNT,
};
use crate::topology::{dead_letter_exchange, delay_queue};

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
///   and at most as long as the longest delay queued ahead of it.
/// - `dead_letter(reason)` republishes it to the queue's dead-letter
///   exchange with the reason in the [`DEAD_LETTER_REASON_HEADER`] header,
///   then acks the original. A plain reject could not carry the reason; if
///   the republish fails, the message is rejected without requeue instead,
///   and still lands in the dead-letter queue, with the broker's `x-death`
///   record but no reason.
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
    /// replaced.
    fn copy_properties(&self, edit: impl FnOnce(&mut FieldTable)) -> BasicProperties {
        let mut headers = FieldTable::default();
        for (name, value) in self
            .received
            .properties
            .headers()
            .iter()
            .flat_map(|t| t.inner())
        {
            if name.as_str() != QUORUM_DELIVERY_COUNT && name.as_str() != PRIOR_DELIVERIES_HEADER {
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
                h.insert(
                    PRIOR_DELIVERIES_HEADER.into(),
                    AMQPValue::LongString(LongString::from(prior.to_string())),
                );
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
        let reason = truncate(reason, MAX_REASON_LEN);
        let properties = self.copy_properties(|h| {
            h.insert(
                DEAD_LETTER_REASON_HEADER.into(),
                AMQPValue::LongString(LongString::from(reason)),
            );
        });
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

fn truncate(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
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
    #[test]
    fn truncates_on_char_boundaries() {
        assert_eq!(super::truncate("héllo", 2), "h");
        assert_eq!(super::truncate("abc", 10), "abc");
    }
}
