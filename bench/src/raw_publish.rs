//! The raw limit of publishing: lapin alone, persistent messages with the
//! same properties and headers the transport sends, a window of publisher
//! confirms at a time on each of one or more confirm channels of one
//! connection.

use std::time::{Duration, Instant};

use anyhow::Context;
use futures::future::{join_all, try_join_all};
use lapin::options::{BasicPublishOptions, ConfirmSelectOptions, QueuePurgeOptions};
use lapin::types::{AMQPValue, FieldTable, LongString, ShortString};
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties};
use tidings_core::Envelope;
use tidings_core::cloudevents::to_attributes;
use tidings_rabbitmq::exchange_name;

/// Persistent delivery mode.
const PERSISTENT: u8 = 2;

/// Confirm channels on a connection of their own.
pub(crate) struct RawPublisher {
    _connection: Connection,
    channels: Vec<Channel>,
}

impl RawPublisher {
    /// Connects to `url` with one confirm channel.
    pub(crate) async fn connect(url: &str) -> anyhow::Result<Self> {
        Self::connect_channels(url, 1).await
    }

    /// Connects to `url` with `channels` confirm channels (at least one).
    pub(crate) async fn connect_channels(url: &str, channels: usize) -> anyhow::Result<Self> {
        let connection = Connection::connect(url, ConnectionProperties::default()).await?;
        let mut opened = Vec::with_capacity(channels.max(1));
        for _ in 0..channels.max(1) {
            let channel = connection.create_channel().await?;
            channel
                .confirm_select(ConfirmSelectOptions::default())
                .await?;
            opened.push(channel);
        }
        Ok(Self {
            _connection: connection,
            channels: opened,
        })
    }

    /// Empties `queue`, so every round publishes into the same state.
    pub(crate) async fn purge(&self, queue: &str) -> anyhow::Result<()> {
        self.channels[0]
            .queue_purge(queue.into(), QueuePurgeOptions::default())
            .await?;
        Ok(())
    }

    /// Publishes `envelopes` to their destinations, `window` at a time,
    /// awaiting every confirm of a window before sending the next.
    pub(crate) async fn publish_all(
        &self,
        envelopes: &[Envelope],
        window: usize,
    ) -> anyhow::Result<Duration> {
        self.publish_spread(envelopes, window, 1).await
    }

    /// Publishes `envelopes` split into `channels` runs of consecutive
    /// messages, each run on a confirm channel of its own, `window` at a
    /// time, the channels at once: up to `window` × `channels` messages
    /// await their confirms together.
    pub(crate) async fn publish_spread(
        &self,
        envelopes: &[Envelope],
        window: usize,
        channels: usize,
    ) -> anyhow::Result<Duration> {
        let channels = &self.channels[..channels.clamp(1, self.channels.len())];
        let run = envelopes.len().div_ceil(channels.len()).max(1);
        let started = Instant::now();
        let runs = channels
            .iter()
            .zip(envelopes.chunks(run))
            .map(|(channel, run)| async move {
                for chunk in run.chunks(window.max(1)) {
                    publish_window(channel, chunk).await?;
                }
                anyhow::Ok(())
            });
        for result in join_all(runs).await {
            result?;
        }
        Ok(started.elapsed())
    }
}

/// Publishes one window on `channel` and awaits its confirms. The window's
/// sends are queued together, as `RabbitPublisher` queues a batch, so the
/// connection writes them in a few large writes: lapin's fastest way to
/// publish.
async fn publish_window(channel: &Channel, envelopes: &[Envelope]) -> anyhow::Result<()> {
    let mut sends = Vec::with_capacity(envelopes.len());
    for envelope in envelopes {
        let exchange = exchange_name(&envelope.destination);
        sends.push(channel.basic_publish(
            exchange.as_str().into(),
            envelope.destination.as_str().into(),
            BasicPublishOptions {
                mandatory: true,
                immediate: false,
            },
            &envelope.payload,
            properties(envelope)?,
        ));
    }
    let confirms = try_join_all(sends).await?;
    for confirmation in try_join_all(confirms).await? {
        anyhow::ensure!(confirmation.is_ack(), "broker refused a message");
    }
    Ok(())
}

fn properties(envelope: &Envelope) -> anyhow::Result<BasicProperties> {
    let mut headers = FieldTable::default();
    for (name, value) in to_attributes(envelope) {
        let key = ShortString::try_new(name.as_str()).context("header name")?;
        headers.insert(key, AMQPValue::LongString(LongString::from(value)));
    }
    let short = |v: &str| ShortString::try_new(v).context("short string");
    Ok(BasicProperties::default()
        .with_message_id(short(&envelope.event_id.to_string())?)
        .with_type(short(&envelope.event_type)?)
        .with_content_type(short(&envelope.content_type)?)
        .with_delivery_mode(PERSISTENT)
        .with_timestamp(unix_seconds(envelope))
        .with_headers(headers))
}

/// When the event occurred, in whole seconds, as the transport stamps it.
fn unix_seconds(envelope: &Envelope) -> u64 {
    envelope
        .occurred_at
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
