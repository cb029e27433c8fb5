//! Settling one received message.

use std::sync::Arc;
use std::time::Duration;

use aws_sdk_sqs::types::Message;
use tidings_core::{AckError, Acker, Redelivery};

use crate::context::QueueContext;
use crate::dead_letter::send_copy;
use crate::error::ack_error;
use crate::heartbeat::Heartbeat;

/// Settles one SQS delivery; see [`SqsSource`](crate::SqsSource).
///
/// - `ack` deletes the message (`DeleteMessageBatch`, together with other
///   acks of the same queue waiting at that moment);
/// - `nack` makes it visible again now, or after the delay
///   (`ChangeMessageVisibility`, whole seconds, at most 12 hours);
/// - `dead_letter` sends a copy carrying the reason to the dead-letter
///   queue, then deletes the original.
///
/// Each first stops the visibility heartbeat. Dropping an unsettled acker
/// stops the heartbeat and makes the message visible again at once.
#[derive(Debug)]
pub struct SqsAcker {
    held: Option<Held>,
}

#[derive(Debug)]
struct Held {
    ctx: Arc<QueueContext>,
    message: Message,
    receipt: Arc<str>,
    id: String,
    heartbeat: Heartbeat,
}

impl SqsAcker {
    pub(crate) fn new(
        ctx: Arc<QueueContext>,
        message: Message,
        receipt: Arc<str>,
        id: String,
        heartbeat: Heartbeat,
    ) -> Self {
        Self {
            held: Some(Held {
                ctx,
                message,
                receipt,
                id,
                heartbeat,
            }),
        }
    }

    /// The message, its heartbeat stopped.
    async fn take(&mut self) -> Result<Held, AckError> {
        let mut held = self.held.take().ok_or(AckError::Expired)?;
        std::mem::replace(&mut held.heartbeat, Heartbeat::disabled())
            .stop()
            .await;
        Ok(held)
    }
}

impl Held {
    async fn delete(&self) -> Result<(), AckError> {
        self.ctx
            .deleter
            .delete(self.receipt.to_string())
            .await
            .map_err(ack_error)
    }

    async fn release(&self, after: Duration) -> Result<(), AckError> {
        self.ctx
            .change_visibility(&self.receipt, after)
            .await
            .map_err(ack_error)
    }

    fn log(&self, what: &'static str, result: &Result<(), AckError>) {
        match result {
            Ok(()) => tracing::debug!(
                messaging.system = "aws_sqs",
                messaging.destination.name = self.ctx.name(),
                messaging.message.id = %self.id,
                "{what}"
            ),
            Err(error) => tracing::info!(
                messaging.system = "aws_sqs",
                messaging.destination.name = self.ctx.name(),
                messaging.message.id = %self.id,
                error = %error,
                "{what} failed"
            ),
        }
    }

    async fn dead_letter(&self, reason: &str) -> Result<(), AckError> {
        let Some(target) = &self.ctx.queue.dead_letter else {
            return Err(AckError::Unsupported(
                "the queue has no dead-letter queue (no redrive policy and none configured)",
            ));
        };
        send_copy(&self.ctx, target, &self.message, reason)
            .await
            .map_err(ack_error)?;
        self.delete().await
    }
}

impl Acker for SqsAcker {
    async fn ack(mut self) -> Result<(), AckError> {
        let held = self.take().await?;
        let result = held.delete().await;
        held.log("acked", &result);
        result
    }

    async fn nack(mut self, redelivery: Redelivery) -> Result<(), AckError> {
        let held = self.take().await?;
        let after = match redelivery {
            Redelivery::Now => Duration::ZERO,
            Redelivery::After(delay) => delay,
        };
        let result = held.release(after).await;
        held.log("nacked", &result);
        result
    }

    async fn dead_letter(mut self, reason: String) -> Result<(), AckError> {
        let held = self.take().await?;
        let result = held.dead_letter(&reason).await;
        held.log("dead-lettered", &result);
        result
    }
}

impl Drop for SqsAcker {
    fn drop(&mut self) {
        let Some(held) = self.held.take() else {
            return;
        };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let Held {
                    heartbeat,
                    ctx,
                    receipt,
                    ..
                } = held;
                heartbeat.stop().await;
                let _ = ctx.change_visibility(&receipt, Duration::ZERO).await;
            });
        }
    }
}
