//! The broker's own limit for the consume scenario: lapin alone receiving
//! and acking the messages, with the consumer's prefetch and nothing else.

use std::time::{Duration, Instant};

use futures::StreamExt;
use lapin::options::{BasicAckOptions, BasicConsumeOptions, BasicQosOptions};
use lapin::types::FieldTable;
use lapin::{Connection, ConnectionProperties};

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
    for _ in 0..count {
        let delivery = consumer
            .next()
            .await
            .ok_or_else(|| anyhow::anyhow!("the queue ran dry"))??;
        delivery.ack(BasicAckOptions::default()).await?;
    }
    let took = started.elapsed();
    let _ = channel.close(200, "OK".into()).await;
    let _ = connection.close(200, "OK".into()).await;
    Ok(took)
}
