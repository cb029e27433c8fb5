//! RabbitMQ dead-letter queues: `<queue>.dlq`, filled by the consumer's
//! acker (with the reason) or by the broker on a reject (with `x-death`).
//!
//! Reading never hands a message back unacknowledged (see
//! [`amqp_moves`](super::amqp_moves) for why): a scan takes each message
//! of the dead-letter queue with `basic.get`, publishes a copy of it to the
//! end of the same queue (every property and header kept but the broker's
//! `x-delivery-count`), and acks the original once the copy is confirmed.
//! A pass goes over the queue's whole depth at its start, so the messages
//! end in the order they had. A message a replay takes is copied to its
//! original queue instead, and one a purge takes is only acked. Dying
//! halfway loses nothing: an original not yet acked goes back to its place
//! when the channel closes, so at worst a message is in the queue twice.
//!
//! The other mechanisms were weighed: a dead-letter queue declared without
//! a delivery limit depends on how an operator declared it (and quorum
//! queues of RabbitMQ 4 cannot turn it off); a stream queue read by offset
//! cannot remove the one message replayed; a dead-letter exchange on the
//! dead-letter queue moves a message elsewhere where the next look would
//! not find it. Copying works on every queue type and version.

use std::sync::Arc;

use tidings_rabbitmq::dead_letter_queue;
use tidings_rabbitmq::lapin::options::{
    BasicGetOptions, ConfirmSelectOptions, QueueDeclareOptions,
};
use tidings_rabbitmq::lapin::types::FieldTable;
use tidings_rabbitmq::lapin::{self, Channel, Connection, ConnectionProperties};
use tokio::sync::Mutex;

use super::amqp_message::{keep_properties, read, replay_properties};
use super::amqp_moves::{Moves, broker};
use super::scan::{Action, DeadLetterQueues, Scan, ScanRequest};
use super::{DeadLetter, DeadLetterFilter, QueueDepth, ReplayOptions};
use crate::AdminError;

/// The dead-letter queues of a RabbitMQ broker.
///
/// ```no_run
/// # async fn demo() -> Result<(), tidings_admin::AdminError> {
/// use tidings_admin::dead_letters::{
///     DeadLetterFilter, DeadLetterQueues, RabbitDeadLetters, ReplayOptions,
/// };
///
/// let broker = RabbitDeadLetters::connect("amqp://guest:guest@127.0.0.1:5672/%2f").await?;
/// let filter = DeadLetterFilter { reason: Some("timeout".into()), ..Default::default() };
/// let report = broker.replay("orders", &filter, ReplayOptions::new().rate(50.0)).await?;
/// println!("replayed {} of {}", report.done, report.matched);
/// # Ok(()) }
/// ```
pub struct RabbitDeadLetters {
    connection: Connection,
    /// The turn scans take (see [`Scan::scan_alone`]).
    turns: Arc<Mutex<()>>,
}

impl std::fmt::Debug for RabbitDeadLetters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RabbitDeadLetters").finish_non_exhaustive()
    }
}

impl RabbitDeadLetters {
    /// Connects to the broker at `url` (`amqp://` or `amqps://`), under
    /// the connection name [`CONNECTION_NAME`](Self::CONNECTION_NAME).
    ///
    /// # Errors
    ///
    /// [`AdminError::Broker`] when the broker cannot be reached or refuses the
    /// connection (a bad URL, credentials or certificate included).
    pub async fn connect(url: &str) -> Result<Self, AdminError> {
        Self::connect_as(url, Self::CONNECTION_NAME).await
    }

    /// The connection name [`connect`](Self::connect) gives the broker.
    pub const CONNECTION_NAME: &str = "tidings-admin";

    /// Connects to the broker at `url` under `connection_name`, the name
    /// the broker's management tools list the connection by.
    ///
    /// # Errors
    ///
    /// [`AdminError::Broker`] when the broker cannot be reached or refuses the
    /// connection (a bad URL, credentials or certificate included).
    pub async fn connect_as(url: &str, connection_name: &str) -> Result<Self, AdminError> {
        let properties =
            ConnectionProperties::default().with_connection_name(connection_name.into());
        let connection = Connection::connect(url, properties).await.map_err(broker)?;
        Ok(Self {
            connection,
            turns: Arc::default(),
        })
    }
}

/// One pass over a dead-letter queue.
struct Pass<'a> {
    channel: &'a Channel,
    queue: &'a str,
    dlq: &'a str,
    action: Action,
    acting: bool,
    options: ReplayOptions,
}

impl Pass<'_> {
    /// Takes `depth` messages (or until the queue is empty), acting on
    /// those matching and copying every other one back.
    async fn run(
        &self,
        depth: u32,
        filter: &DeadLetterFilter,
    ) -> Result<(Vec<DeadLetter>, usize), AdminError> {
        let mut moves = Moves::new(self.channel);
        let mut letters = Vec::new();
        let mut done = 0;
        for _ in 0..depth {
            let Some(got) = self
                .channel
                .basic_get(self.dlq.into(), BasicGetOptions { no_ack: false })
                .await
                .map_err(broker)?
            else {
                break;
            };
            let (tag, body) = (got.delivery.delivery_tag, &got.delivery.data);
            let letter = read(&got);
            let chosen = letters.len() < filter.limit && filter.matches(&letter);
            match self.action {
                Action::Replay if chosen && self.acting => {
                    if let Some(pause) = self.options.pause().filter(|_| done > 0) {
                        // Paced, each replay is settled before the next, so
                        // one stopped halfway has removed what it copied.
                        moves.settle().await?;
                        tokio::time::sleep(pause).await;
                    }
                    let properties = replay_properties(&got.delivery.properties);
                    moves
                        .copy(tag, self.queue, TARGET_HINT, body, properties)
                        .await?;
                    done += 1;
                }
                Action::Purge if chosen && self.acting => {
                    moves.remove(tag).await?;
                    done += 1;
                }
                _ => {
                    let properties = keep_properties(&got.delivery.properties);
                    moves
                        .copy(tag, self.dlq, DLQ_HINT, body, properties)
                        .await?;
                }
            }
            if chosen {
                letters.push(letter);
            }
        }
        moves.settle().await?;
        Ok((letters, done))
    }
}

const DLQ_HINT: &str =
    "its queue was never declared with a dead-letter queue, or the name is misspelt";
const TARGET_HINT: &str = "declare it again (Topology::declare) before replaying into it";

/// The message count of `queue`, declared passively (never created).
async fn count(channel: &Channel, queue: &str, hint: &'static str) -> Result<u32, AdminError> {
    let passive = QueueDeclareOptions {
        passive: true,
        ..QueueDeclareOptions::default()
    };
    // A passive declare of a missing queue closes the channel: the caller
    // stops there.
    match channel
        .queue_declare(queue.into(), passive, FieldTable::default())
        .await
    {
        Ok(declared) => Ok(declared.message_count()),
        Err(error) if is_not_found(&error) => Err(AdminError::UnknownQueue {
            queue: queue.to_owned(),
            hint,
        }),
        Err(error) => Err(broker(error)),
    }
}

fn is_not_found(error: &lapin::Error) -> bool {
    error.to_string().contains("NOT_FOUND")
}

impl DeadLetterQueues for RabbitDeadLetters {
    async fn depth(&self, queue: &str) -> Result<QueueDepth, AdminError> {
        let dlq = dead_letter_queue(queue);
        let channel = self.connection.create_channel().await.map_err(broker)?;
        let messages = count(&channel, &dlq, DLQ_HINT).await?;
        let _ = channel.close(200, "OK".into()).await;
        Ok(QueueDepth {
            queue: dlq,
            messages: u64::from(messages),
        })
    }
}

impl Scan for RabbitDeadLetters {
    fn dead_letter_queue(&self, queue: &str) -> String {
        dead_letter_queue(queue)
    }

    fn turns(&self) -> &Mutex<()> {
        &self.turns
    }

    /// Takes every message of the dead-letter queue once, acting on those
    /// matching (up to the filter's limit) and copying the rest back.
    async fn scan(&self, request: ScanRequest<'_>) -> Result<(Vec<DeadLetter>, usize), AdminError> {
        let (queue, filter, action, options) = request.parts();
        let dlq = dead_letter_queue(queue);
        let channel = self.connection.create_channel().await.map_err(broker)?;
        let depth = count(&channel, &dlq, DLQ_HINT).await?;
        if action == Action::Replay {
            count(&channel, queue, TARGET_HINT).await?;
        }
        channel
            .confirm_select(ConfirmSelectOptions::default())
            .await
            .map_err(broker)?;
        let scanned = Pass {
            channel: &channel,
            queue,
            dlq: &dlq,
            acting: action != Action::Peek && !options.dry_run,
            action,
            options,
        }
        .run(depth, filter)
        .await;
        // On a failure this puts back every message not yet acked.
        let _ = channel.close(200, "OK".into()).await;
        scanned
    }
}
