//! Taking messages out of a RabbitMQ queue so that none is ever handed
//! back unacknowledged: each is copied where it goes (back to the end of
//! its own queue, or to the queue a replay sends it to), and the original
//! is acked only once the broker has confirmed the copy.
//!
//! A `basic.nack` with requeue or a `basic.reject` counts as a failed
//! delivery on a quorum queue, and a queue with a delivery limit (RabbitMQ
//! 4's quorum queues have one of 20 by default) drops a message past it,
//! silently when the queue has no dead-letter exchange of its own, as a
//! dead-letter queue has not. A reader cannot tell a quorum queue from a
//! classic one over AMQP, so it never hands a message back: a copy is a
//! new message, which starts with no count at all.
//!
//! Confirms are awaited in windows of [`WINDOW`], and the window is settled
//! with one ack (`multiple`) of its last delivery tag, which covers every
//! message the channel took before it.

use std::time::Duration;

use tidings_rabbitmq::lapin::options::{BasicAckOptions, BasicPublishOptions};
use tidings_rabbitmq::lapin::{self, BasicProperties, Channel, Confirmation, PublisherConfirm};
use tracing::warn;

use crate::AdminError;

/// How many moves wait for their confirms at most before they are settled.
pub(super) const WINDOW: usize = 64;

/// How long a copy may wait for the broker's confirm.
const CONFIRM_TIMEOUT: Duration = Duration::from_secs(30);

/// One message taken: its delivery tag and, unless it is only removed, the
/// confirm of its copy.
struct Move {
    tag: u64,
    copy: Option<Copy>,
}

struct Copy {
    confirm: PublisherConfirm,
    target: String,
    hint: &'static str,
}

/// The moves of one channel (in confirm mode) not yet settled, in the
/// order their messages were taken.
pub(super) struct Moves<'a> {
    channel: &'a Channel,
    pending: Vec<Move>,
}

impl<'a> Moves<'a> {
    /// No moves yet on `channel`, which must be in confirm mode.
    pub(super) fn new(channel: &'a Channel) -> Self {
        Self {
            channel,
            pending: Vec::with_capacity(WINDOW),
        }
    }

    /// Publishes a copy of the message taken under `tag` to `target`
    /// (through the default exchange); the original is acked once the copy
    /// is confirmed. `hint` says what to do should `target` be gone.
    pub(super) async fn copy(
        &mut self,
        tag: u64,
        target: &str,
        hint: &'static str,
        body: &[u8],
        properties: BasicProperties,
    ) -> Result<(), AdminError> {
        let options = BasicPublishOptions {
            mandatory: true,
            immediate: false,
        };
        let confirm = self
            .channel
            .basic_publish("".into(), target.into(), options, body, properties)
            .await
            .map_err(broker)?;
        let copy = Copy {
            confirm,
            target: target.to_owned(),
            hint,
        };
        self.push(Move {
            tag,
            copy: Some(copy),
        })
        .await
    }

    /// Removes the message taken under `tag`, with the next settlement.
    pub(super) async fn remove(&mut self, tag: u64) -> Result<(), AdminError> {
        self.push(Move { tag, copy: None }).await
    }

    async fn push(&mut self, taken: Move) -> Result<(), AdminError> {
        self.pending.push(taken);
        if self.pending.len() >= WINDOW {
            self.settle().await?;
        }
        Ok(())
    }

    /// Waits for every pending copy's confirm, then acks every message
    /// taken so far with one ack. A copy refused leaves its original and
    /// every later one unacked: the broker puts them back when the channel
    /// closes.
    pub(super) async fn settle(&mut self) -> Result<(), AdminError> {
        let Some(last) = self.pending.last().map(|m| m.tag) else {
            return Ok(());
        };
        for taken in self.pending.drain(..) {
            if let Some(copy) = taken.copy {
                confirmed(copy).await?;
            }
        }
        let all = BasicAckOptions { multiple: true };
        self.channel.basic_ack(last, all).await.map_err(broker)
    }
}

/// Waits for the broker to take `copy`.
async fn confirmed(copy: Copy) -> Result<(), AdminError> {
    let confirmation = tokio::time::timeout(CONFIRM_TIMEOUT, copy.confirm)
        .await
        .map_err(|_| {
            AdminError::Broker("the broker did not confirm a copied message in time".into())
        })?
        .map_err(broker)?;
    match confirmation {
        Confirmation::Ack(None) => Ok(()),
        Confirmation::Ack(Some(_)) | Confirmation::Nack(Some(_)) => Err(AdminError::UnknownQueue {
            queue: copy.target,
            hint: copy.hint,
        }),
        other => {
            warn!(
                messaging.destination.name = %copy.target,
                ?other,
                "copied message refused"
            );
            Err(AdminError::Broker(
                format!("the broker refused a copied message ({other:?})").into(),
            ))
        }
    }
}

/// A broker's error, as the admin API reports it.
pub(super) fn broker(error: lapin::Error) -> AdminError {
    AdminError::Broker(Box::new(error))
}
