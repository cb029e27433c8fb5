//! Publishing envelopes with publisher confirms.

use std::collections::HashSet;
use std::sync::Arc;

use futures::future::join_all;
use lapin::ExchangeKind;
use lapin::options::{BasicPublishOptions, ConfirmSelectOptions, ExchangeDeclareOptions};
use lapin::types::FieldTable;
use lapin::{BasicProperties, Channel, Confirmation};
use tidings_core::{Envelope, PublishError, Publisher};
use tokio::sync::Mutex;
use tokio::time::{Instant, timeout_at};
use tracing::Instrument;

use crate::connection::Connector;
use crate::error::{Cause, cause, names_exchange, publish_error};
use crate::options::{ConnectionOptions, PublisherOptions, RoutingKey};
use crate::properties::{encode, short};
use crate::topology::exchange_name;

/// How often a batch is sent again, on a fresh channel, after the broker
/// closed the channel because of another message in it.
const MAX_ROUNDS: usize = 3;

/// Publishes envelopes to RabbitMQ; `Ok` only on a positive publisher
/// confirm.
///
/// Every message is published `mandatory` and persistent, to the exchange
/// and with the routing key its destination's [`DestinationOptions`]
/// name. A batch is pipelined on one confirm channel and its confirms are
/// awaited together; each message gets its own result:
///
/// | what happened | error |
/// |---|---|
/// | routed nowhere (returned) or the exchange does not exist | [`PublishError::Unroutable`] |
/// | payload above [`PublisherOptions::max_message_size`] or the broker's limit | [`PublishError::TooLarge`] |
/// | a header or property AMQP cannot carry | [`PublishError::Invalid`] |
/// | negative confirm | [`PublishError::Refused`] |
/// | no confirm within the timeout | [`PublishError::Timeout`] |
/// | connection down | [`PublishError::Unavailable`] |
///
/// When the broker closes the channel because of one message (a missing
/// exchange, an oversized body), the other messages of the batch are sent
/// again on a new channel. A dropped connection is reopened with backoff on
/// the next publish.
///
/// [`DestinationOptions`]: crate::DestinationOptions
#[derive(Clone)]
pub struct RabbitPublisher {
    inner: Arc<Inner>,
}

struct Inner {
    connector: Connector,
    options: PublisherOptions,
    channel: Mutex<Option<(Channel, usize)>>,
    exchanges: Mutex<HashSet<String>>,
}

impl std::fmt::Debug for RabbitPublisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RabbitPublisher")
            .field("connection", self.inner.connector.options())
            .field("options", &self.inner.options)
            .finish()
    }
}

/// One message ready to send.
struct Outgoing<'a> {
    index: usize,
    envelope: &'a Envelope,
    exchange: String,
    routing_key: String,
    properties: BasicProperties,
}

type Slot = Option<Result<(), PublishError>>;

impl RabbitPublisher {
    /// A publisher with its own connection, opened on first publish.
    pub fn new(connection: ConnectionOptions, options: PublisherOptions) -> Self {
        Self {
            inner: Arc::new(Inner {
                connector: Connector::new(connection),
                options,
                channel: Mutex::new(None),
                exchanges: Mutex::new(HashSet::new()),
            }),
        }
    }

    /// The open confirm channel and the connection's frame size.
    async fn channel(&self) -> Result<(Channel, usize), lapin::Error> {
        let mut cached = self.inner.channel.lock().await;
        if let Some((ch, frame_max)) = cached.as_ref() {
            if ch.status().connected() {
                return Ok((ch.clone(), *frame_max));
            }
        }
        let conn = self.inner.connector.connection().await?;
        let ch = conn.create_channel().await?;
        ch.confirm_select(ConfirmSelectOptions::default()).await?;
        let frame_max = conn.configuration().frame_max() as usize;
        *cached = Some((ch.clone(), frame_max));
        Ok((ch, frame_max))
    }

    async fn forget_channel(&self) {
        self.inner.channel.lock().await.take();
    }

    /// Where `envelope` goes and its properties, or why it cannot go.
    fn prepare<'a>(
        &self,
        index: usize,
        envelope: &'a Envelope,
        frame_max: usize,
    ) -> Result<Outgoing<'a>, PublishError> {
        let size = envelope.payload.len();
        let limit = self.inner.options.max_message_size;
        if size > limit {
            return Err(PublishError::TooLarge { size, limit });
        }
        let destination = &envelope.destination;
        let settings = self
            .inner
            .options
            .destinations
            .get(destination)
            .cloned()
            .unwrap_or_default();
        let exchange = settings
            .exchange
            .unwrap_or_else(|| exchange_name(destination));
        let routing_key = match (settings.routing_key, &envelope.ordering_key) {
            (RoutingKey::OrderingKey, Some(key)) => key.clone(),
            _ => destination.clone(),
        };
        short("exchange", &exchange)?;
        short("routing key", &routing_key)?;
        Ok(Outgoing {
            index,
            envelope,
            exchange,
            routing_key,
            properties: encode(envelope, frame_max)?,
        })
    }

    /// Sends `batch` on one channel and awaits every confirm; returns the
    /// messages to send again.
    async fn round<'a>(
        &self,
        batch: Vec<Outgoing<'a>>,
        ch: &Channel,
        slots: &mut [Slot],
    ) -> Vec<Outgoing<'a>> {
        let mut confirms = Vec::with_capacity(batch.len());
        for out in &batch {
            let sent = ch
                .basic_publish(
                    out.exchange.as_str().into(),
                    out.routing_key.as_str().into(),
                    BasicPublishOptions {
                        mandatory: true,
                        immediate: false,
                    },
                    &out.envelope.payload,
                    out.properties.clone(),
                )
                .await;
            confirms.push(sent);
        }
        let deadline = Instant::now() + self.inner.options.confirm_timeout;
        let confirmed = join_all(confirms.into_iter().map(|sent| async move {
            match sent {
                Ok(confirm) => timeout_at(deadline, confirm).await.map_err(|_| ()),
                Err(e) => Ok(Err(e)),
            }
        }))
        .await;
        let mut again = Vec::new();
        let mut broken = false;
        let mut failed_exchanges = HashSet::new();
        for (out, result) in batch.into_iter().zip(confirmed) {
            broken |= !matches!(result, Ok(Ok(_)));
            if let Ok(Err(error)) = &result {
                if let Cause::NotFound(text) = cause(error) {
                    if names_exchange(&text, &out.exchange) {
                        failed_exchanges.insert(out.exchange.clone());
                    }
                }
            }
            match settle(&out, result) {
                Some(outcome) => slots[out.index] = Some(outcome),
                None => again.push(out),
            }
        }
        if broken {
            self.forget_channel().await;
            let mut known = self.inner.exchanges.lock().await;
            for slot_exchange in &failed_exchanges {
                known.remove(slot_exchange);
            }
        }
        again
    }
}

/// The outcome of one message, or `None` to send it again.
fn settle(out: &Outgoing<'_>, result: Result<Result<Confirmation, lapin::Error>, ()>) -> Slot {
    let destination = &out.envelope.destination;
    let size = out.envelope.payload.len();
    let outcome = match result {
        Err(()) => Err(PublishError::Timeout),
        Ok(Ok(Confirmation::Ack(None))) => Ok(()),
        Ok(Ok(Confirmation::Ack(Some(_)) | Confirmation::Nack(Some(_)))) => {
            Err(PublishError::Unroutable {
                destination: destination.clone(),
            })
        }
        Ok(Ok(Confirmation::Nack(None))) => Err(PublishError::Refused {
            reason: "the broker sent a negative publisher confirm".to_owned(),
        }),
        Ok(Ok(Confirmation::NotRequested)) => Err(PublishError::Refused {
            reason: "the channel is not in confirm mode".to_owned(),
        }),
        Ok(Err(error)) => match cause(&error) {
            Cause::NotFound(text) if names_exchange(&text, &out.exchange) => {
                Err(PublishError::Unroutable {
                    destination: destination.clone(),
                })
            }
            Cause::TooLarge { limit: Some(limit) } if size > limit => {
                Err(PublishError::TooLarge { size, limit })
            }
            _ => return None,
        },
    };
    Some(outcome)
}

impl Publisher for RabbitPublisher {
    async fn publish(&self, envelope: &Envelope) -> Result<(), PublishError> {
        let mut results = self.publish_batch(std::slice::from_ref(envelope)).await;
        results.pop().unwrap_or(Err(PublishError::Timeout))
    }

    fn publish_batch(
        &self,
        envelopes: &[Envelope],
    ) -> impl Future<Output = Vec<Result<(), PublishError>>> + Send {
        let span = tracing::debug_span!(
            "publish",
            messaging.system = "rabbitmq",
            messaging.operation.name = "publish",
            messaging.batch.message_count = envelopes.len(),
        );
        self.publish_all(envelopes).instrument(span)
    }
}

impl RabbitPublisher {
    async fn publish_all(&self, envelopes: &[Envelope]) -> Vec<Result<(), PublishError>> {
        let mut slots: Vec<Slot> = envelopes.iter().map(|_| None).collect();
        let mut pending: Option<Vec<Outgoing<'_>>> = None;
        let mut last_error = None;
        for _ in 0..MAX_ROUNDS {
            let (ch, frame_max) = match self.channel().await {
                Ok(open) => open,
                Err(error) => {
                    last_error = Some(error);
                    break;
                }
            };
            let batch = match pending.take() {
                Some(batch) => batch,
                None => {
                    let batch = self.prepare_all(envelopes, frame_max, &mut slots);
                    self.drop_missing_exchanges(batch, &mut slots).await
                }
            };
            if batch.is_empty() {
                break;
            }
            pending = Some(self.round(batch, &ch, &mut slots).await);
        }
        for (envelope, slot) in envelopes.iter().zip(&mut slots) {
            if slot.is_none() {
                let error = last_error.clone().unwrap_or_else(|| {
                    lapin::ErrorKind::InvalidChannelState(lapin::ChannelState::Closed, "publish")
                        .into()
                });
                *slot = Some(Err(publish_error(
                    error,
                    &envelope.destination,
                    envelope.payload.len(),
                )));
            }
        }
        envelopes
            .iter()
            .zip(slots)
            .map(|(envelope, slot)| log(envelope, slot.unwrap_or(Err(PublishError::Timeout))))
            .collect()
    }

    /// Fails the messages whose exchange does not exist. Publishing to a
    /// missing exchange makes the broker close the channel, which would
    /// cost the confirms of the other messages in flight; a passive
    /// declare on a separate channel finds it out first. Exchanges found
    /// are remembered until a publish to them fails.
    async fn drop_missing_exchanges<'a>(
        &self,
        batch: Vec<Outgoing<'a>>,
        slots: &mut [Slot],
    ) -> Vec<Outgoing<'a>> {
        let unknown: HashSet<String> = {
            let known = self.inner.exchanges.lock().await;
            batch
                .iter()
                .map(|out| &out.exchange)
                .filter(|e| !known.contains(*e))
                .cloned()
                .collect()
        };
        let mut missing = HashSet::new();
        for exchange in unknown {
            match self.exchange_exists(&exchange).await {
                Ok(true) => {
                    self.inner.exchanges.lock().await.insert(exchange);
                }
                Ok(false) => {
                    missing.insert(exchange);
                }
                // Let the publish itself report what is wrong.
                Err(_) => {}
            }
        }
        let (gone, kept): (Vec<_>, Vec<_>) = batch
            .into_iter()
            .partition(|out| missing.contains(&out.exchange));
        for out in gone {
            slots[out.index] = Some(Err(PublishError::Unroutable {
                destination: out.envelope.destination.clone(),
            }));
        }
        kept
    }

    async fn exchange_exists(&self, exchange: &str) -> Result<bool, lapin::Error> {
        if exchange.is_empty() {
            return Ok(true);
        }
        let ch = self.inner.connector.channel().await?;
        let options = ExchangeDeclareOptions {
            passive: true,
            ..ExchangeDeclareOptions::default()
        };
        let found = ch
            .exchange_declare(
                exchange.into(),
                ExchangeKind::Direct,
                options,
                FieldTable::default(),
            )
            .await;
        match found {
            Ok(()) => {
                let _ = ch.close(200, "OK".into()).await;
                Ok(true)
            }
            Err(error) => match cause(&error) {
                Cause::NotFound(_) => Ok(false),
                _ => Err(error),
            },
        }
    }

    fn prepare_all<'a>(
        &self,
        envelopes: &'a [Envelope],
        frame_max: usize,
        slots: &mut [Slot],
    ) -> Vec<Outgoing<'a>> {
        let mut batch = Vec::with_capacity(envelopes.len());
        for (index, envelope) in envelopes.iter().enumerate() {
            match self.prepare(index, envelope, frame_max) {
                Ok(out) => batch.push(out),
                Err(error) => slots[index] = Some(Err(error)),
            }
        }
        batch
    }
}

fn log(envelope: &Envelope, outcome: Result<(), PublishError>) -> Result<(), PublishError> {
    match &outcome {
        Ok(()) => tracing::debug!(
            messaging.destination.name = %envelope.destination,
            messaging.message.id = %envelope.event_id,
            "published"
        ),
        Err(error) => tracing::info!(
            messaging.destination.name = %envelope.destination,
            messaging.message.id = %envelope.event_id,
            transient = error.is_transient(),
            error = %error,
            "publish failed"
        ),
    }
    outcome
}
