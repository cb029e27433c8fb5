//! What reached the queue: every message read back after a round, counted
//! by event id (the message id the transport sets), so a round can tell
//! events lost from events published twice.

use std::collections::{HashMap, HashSet};

use anyhow::Context;
use futures::StreamExt;
use lapin::options::{BasicConsumeOptions, QueueDeclareOptions};
use lapin::types::FieldTable;
use lapin::{Connection, ConnectionProperties};
use uuid::Uuid;

/// How the staged events and the messages in the queue compare.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Received {
    /// Staged events with no message.
    pub(super) lost: usize,
    /// Messages beyond one per staged event.
    pub(super) duplicates: usize,
}

/// The number of messages in a queue, read on a channel kept open.
pub(super) struct QueueDepth {
    connection: Connection,
    channel: lapin::Channel,
    queue: String,
}

impl QueueDepth {
    /// Opens a channel for reading `queue`'s depth.
    pub(super) async fn open(url: &str, queue: &str) -> anyhow::Result<Self> {
        let connection = Connection::connect(url, ConnectionProperties::default()).await?;
        let channel = connection.create_channel().await?;
        Ok(Self {
            connection,
            channel,
            queue: queue.to_owned(),
        })
    }

    /// Messages ready in the queue now.
    pub(super) async fn get(&self) -> anyhow::Result<usize> {
        Ok(depth(&self.channel, &self.queue).await?)
    }

    /// Closes the channel and connection.
    pub(super) async fn close(self) {
        let _ = self.channel.close(200, "OK".into()).await;
        let _ = self.connection.close(200, "OK".into()).await;
    }
}

async fn depth(channel: &lapin::Channel, queue: &str) -> lapin::Result<usize> {
    let passive = QueueDeclareOptions {
        passive: true,
        ..QueueDeclareOptions::default()
    };
    let queue = channel
        .queue_declare(queue.into(), passive, FieldTable::default())
        .await?;
    Ok(queue.message_count() as usize)
}

/// Reads every message in `queue` (acknowledged on delivery) and compares
/// their event ids with `staged`.
pub(super) async fn read_back(
    url: &str,
    queue: &str,
    staged: &HashSet<Uuid>,
) -> anyhow::Result<Received> {
    let connection = Connection::connect(url, ConnectionProperties::default()).await?;
    let channel = connection.create_channel().await?;
    let waiting = depth(&channel, queue).await?;
    let no_ack = BasicConsumeOptions {
        no_ack: true,
        ..BasicConsumeOptions::default()
    };
    let mut consumer = channel
        .basic_consume(queue.into(), "".into(), no_ack, FieldTable::default())
        .await?;
    let mut seen: HashMap<Uuid, usize> = HashMap::with_capacity(waiting);
    for _ in 0..waiting {
        let delivery = consumer.next().await.context("the queue ran dry")??;
        let id = delivery
            .properties
            .message_id()
            .as_ref()
            .and_then(|id| Uuid::parse_str(id.as_str()).ok())
            .context("a message without an event id")?;
        *seen.entry(id).or_default() += 1;
    }
    let _ = channel.close(200, "OK".into()).await;
    let _ = connection.close(200, "OK".into()).await;
    Ok(Received {
        lost: staged.iter().filter(|id| !seen.contains_key(id)).count(),
        duplicates: seen.values().map(|n| n - 1).sum(),
    })
}
