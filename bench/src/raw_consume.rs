//! The broker's own limit for the consume scenario: lapin alone receiving
//! and acking the messages, with the consumer's prefetch and nothing else.
//! Deliveries are handled in order, one at a time, so each ack may settle
//! every delivery before it (`multiple`): one ack per [`ACK_EVERY`].

use std::time::{Duration, Instant};

use futures::StreamExt;
use lapin::options::{BasicAckOptions, BasicConsumeOptions, BasicQosOptions};
use lapin::types::FieldTable;
use lapin::{Connection, ConnectionProperties};

/// Deliveries settled by each ack.
const ACK_EVERY: usize = 16;

/// Receives and acks `count` messages from `queue`, `prefetch` unacked at
/// most; returns how long it took.
pub(crate) async fn receive_and_ack(
    url: &str,
    queue: &str,
    count: usize,
    prefetch: u16,
) -> anyhow::Result<Duration> {
    let connection = Connection::connect(url, ConnectionProperties::default()).await?;
    let channel = connection.create_channel().await?;
    channel
        .basic_qos(prefetch, BasicQosOptions::default())
        .await?;
    let started = Instant::now();
    let mut consumer = channel
        .basic_consume(
            queue.into(),
            "".into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await?;
    for n in 1..=count {
        let delivery = consumer
            .next()
            .await
            .ok_or_else(|| anyhow::anyhow!("the queue ran dry"))??;
        if n % ACK_EVERY == 0 || n == count {
            delivery.ack(BasicAckOptions { multiple: true }).await?;
        }
    }
    let took = started.elapsed();
    let _ = channel.close(200, "OK".into()).await;
    let _ = connection.close(200, "OK".into()).await;
    Ok(took)
}
