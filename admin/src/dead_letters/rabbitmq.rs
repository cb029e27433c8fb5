//! RabbitMQ dead-letter queues: `<queue>.dlq`, filled by the consumer's
//! acker (with the reason) or by the broker on a reject (with `x-death`).
//!
//! Reading takes each message with `basic.get` and holds it unacknowledged
//! until the scan ends, then returns every message not replayed or purged
//! to the queue with one `basic.nack` (requeue): the broker puts them back
//! in their places, and nothing is lost if the tool dies, since the broker
//! requeues a dead channel's messages itself.

use std::time::Duration;

use tidings_rabbitmq::dead_letter_queue;
use tidings_rabbitmq::lapin::message::BasicGetMessage;
use tidings_rabbitmq::lapin::options::{
    BasicAckOptions, BasicGetOptions, BasicNackOptions, BasicPublishOptions, ConfirmSelectOptions,
    QueueDeclareOptions,
};
use tidings_rabbitmq::lapin::types::FieldTable;
use tidings_rabbitmq::lapin::{self, Channel, Confirmation, Connection, ConnectionProperties};
use tracing::warn;

use super::amqp_message::{read, replay_properties};
use super::scan::{Action, DeadLetterQueues, Scan};
use super::{DeadLetter, DeadLetterFilter, QueueDepth, ReplayOptions};
use crate::AdminError;

/// How long a replayed copy may wait for the broker's confirm.
const CONFIRM_TIMEOUT: Duration = Duration::from_secs(30);

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
}

impl std::fmt::Debug for RabbitDeadLetters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RabbitDeadLetters").finish_non_exhaustive()
    }
}

impl RabbitDeadLetters {
    /// Connects to the broker at `url` (`amqp://` or `amqps://`), under
    /// the connection name [`CONNECTION_NAME`](Self::CONNECTION_NAME).
    pub async fn connect(url: &str) -> Result<Self, AdminError> {
        Self::connect_as(url, Self::CONNECTION_NAME).await
    }

    /// The connection name [`connect`](Self::connect) gives the broker.
    pub const CONNECTION_NAME: &str = "tidings-admin";

    /// Connects to the broker at `url` under `connection_name`, the name
    /// the broker's management tools list the connection by.
    pub async fn connect_as(url: &str, connection_name: &str) -> Result<Self, AdminError> {
        let properties =
            ConnectionProperties::default().with_connection_name(connection_name.into());
        let connection = Connection::connect(url, properties).await.map_err(broker)?;
        Ok(Self { connection })
    }

    /// Takes every message of the dead-letter queue once, acting on those
    /// matching (up to the filter's limit), and returns the rest.
    async fn scan_queue(
        &self,
        queue: &str,
        filter: &DeadLetterFilter,
        action: Action,
        options: ReplayOptions,
    ) -> Result<(Vec<DeadLetter>, usize), AdminError> {
        let dlq = dead_letter_queue(queue);
        let channel = self.connection.create_channel().await.map_err(broker)?;
        let depth = count(&channel, &dlq, DLQ_HINT).await?;
        let acting = action != Action::Peek && !options.dry_run;
        if action == Action::Replay {
            count(&channel, queue, TARGET_HINT).await?;
            channel
                .confirm_select(ConfirmSelectOptions::default())
                .await
                .map_err(broker)?;
        }
        let mut letters = Vec::new();
        let mut done = 0;
        let mut last_held = None;
        for _ in 0..depth {
            if letters.len() >= filter.limit {
                break;
            }
            let Some(got) = channel
                .basic_get(dlq.as_str().into(), BasicGetOptions { no_ack: false })
                .await
                .map_err(broker)?
            else {
                break;
            };
            let tag = got.delivery.delivery_tag;
            let letter = read(&got);
            if !filter.matches(&letter) || !acting {
                last_held = Some(tag);
                if filter.matches(&letter) {
                    letters.push(letter);
                }
                continue;
            }
            if action == Action::Replay {
                if let Some(pause) = options.pause().filter(|_| done > 0) {
                    tokio::time::sleep(pause).await;
                }
                republish(&channel, queue, &got).await?;
            }
            channel
                .basic_ack(tag, BasicAckOptions::default())
                .await
                .map_err(broker)?;
            done += 1;
            letters.push(letter);
        }
        if let Some(tag) = last_held {
            let requeue = BasicNackOptions {
                multiple: true,
                requeue: true,
            };
            channel.basic_nack(tag, requeue).await.map_err(broker)?;
        }
        let _ = channel.close(200, "OK".into()).await;
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

/// Publishes a copy of a dead letter to `queue` and waits for the confirm.
async fn republish(
    channel: &Channel,
    queue: &str,
    got: &BasicGetMessage,
) -> Result<(), AdminError> {
    let options = BasicPublishOptions {
        mandatory: true,
        immediate: false,
    };
    let properties = replay_properties(&got.delivery.properties);
    let confirm = channel
        .basic_publish(
            "".into(),
            queue.into(),
            options,
            &got.delivery.data,
            properties,
        )
        .await
        .map_err(broker)?;
    let confirmation = tokio::time::timeout(CONFIRM_TIMEOUT, confirm)
        .await
        .map_err(|_| {
            AdminError::Broker("the broker did not confirm a replayed message in time".into())
        })?
        .map_err(broker)?;
    match confirmation {
        Confirmation::Ack(None) => Ok(()),
        Confirmation::Ack(Some(_)) | Confirmation::Nack(Some(_)) => Err(AdminError::UnknownQueue {
            queue: queue.to_owned(),
            hint: TARGET_HINT,
        }),
        other => {
            warn!(
                messaging.destination.name = queue,
                ?other,
                "replayed message refused"
            );
            Err(AdminError::Broker(
                format!("the broker refused a replayed message ({other:?})").into(),
            ))
        }
    }
}

fn is_not_found(error: &lapin::Error) -> bool {
    error.to_string().contains("NOT_FOUND")
}

fn broker(error: lapin::Error) -> AdminError {
    AdminError::Broker(Box::new(error))
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

    async fn scan(
        &self,
        queue: &str,
        filter: &DeadLetterFilter,
        action: Action,
        options: ReplayOptions,
    ) -> Result<(Vec<DeadLetter>, usize), AdminError> {
        self.scan_queue(queue, filter, action, options).await
    }
}
