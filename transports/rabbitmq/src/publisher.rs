//! Publishing envelopes with publisher confirms.

use std::sync::Arc;

use futures::future::join_all;
use lapin::Channel;
use lapin::options::{BasicPublishOptions, ConfirmSelectOptions};
use tidings_core::port::trace_outcome;
use tidings_core::{Envelope, PublishBatch, PublishError, Publisher, Queued};
use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::confirms::{confirmed_by, sent_in_order};
use crate::connection::Connector;
use crate::error::{Cause, cause, names_exchange, publish_error};
use crate::exchanges::KnownExchanges;
use crate::lanes::Lanes;
use crate::options::{ConnectionOptions, PublisherOptions};
use crate::outgoing::{Outgoing, Sent};
use crate::properties::encode;

/// How many rounds in a row may settle nothing before the messages left
/// get the last error they met.
const MAX_ROUNDS: usize = 3;

/// Publishes envelopes to RabbitMQ; `Ok` only on a positive publisher
/// confirm.
///
/// Every message is published `mandatory` and persistent, to the exchange
/// and with the routing key its destination's [`DestinationOptions`]
/// name. A batch's messages are queued on one confirm channel together, in
/// batch order, so the connection writes them in a few large writes, and
/// their confirms are awaited together; each message gets its own result:
///
/// | what happened | error |
/// |---|---|
/// | routed nowhere (returned) or the exchange does not exist | [`PublishError::Unroutable`] |
/// | payload above [`PublisherOptions::max_message_size`] or the broker's limit | [`PublishError::TooLarge`] |
/// | a header or property AMQP cannot carry, or a reserved header ([`tidings_core::reserved`]) | [`PublishError::Invalid`] |
/// | refused by the broker when sent alone (it closed the channel over it) | [`PublishError::Invalid`] |
/// | negative confirm | [`PublishError::Refused`] |
/// | no confirm within the timeout | [`PublishError::Timeout`] |
/// | connection down | [`PublishError::Unavailable`] |
///
/// When the broker closes the channel because of one message (a missing
/// exchange, an oversized body, a header it will not take, an exchange the
/// user may not publish to), that message gets its error and the other
/// messages of the batch are sent again on a new channel. Where the
/// broker's words do not say which message it was, the messages left are
/// sent one at a time until the broker refuses one sent alone, which is
/// then the one at fault, and the rest together again. A dropped connection
/// is reopened with backoff on the next publish.
///
/// [`DestinationOptions`]: crate::DestinationOptions
#[derive(Clone)]
pub struct RabbitPublisher {
    inner: Arc<Inner>,
}

struct Inner {
    connector: Connector,
    options: PublisherOptions,
    /// One slot per confirm channel, each opened on first use.
    channels: Vec<Mutex<Option<(Channel, usize)>>>,
    exchanges: KnownExchanges,
}

impl std::fmt::Debug for RabbitPublisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RabbitPublisher")
            .field("connection", self.inner.connector.options())
            .field("options", &self.inner.options)
            .finish()
    }
}

type Slot = Option<Result<(), PublishError>>;

/// What one round of sends came to.
#[derive(Default)]
struct Round<'a> {
    /// Messages to send again.
    again: Vec<Outgoing<'a>>,
    /// Whether any send failed or went unanswered, so the channel is not
    /// to be trusted.
    broken: bool,
    /// Whether any message got an error of its own.
    refused: bool,
    /// Whether the broker closed the channel over something sent on it,
    /// rather than the connection going away.
    closed_over_a_message: bool,
}

impl RabbitPublisher {
    /// A publisher with its own connection, opened on first publish.
    ///
    /// ```
    /// use tidings_rabbitmq::{ConnectionOptions, PublisherOptions, RabbitPublisher};
    ///
    /// let connection = ConnectionOptions::new("amqp://guest:guest@127.0.0.1:5672/%2f")
    ///     .connection_name("orders-relay");
    /// let publisher = RabbitPublisher::new(connection, PublisherOptions::default());
    /// # drop(publisher);
    /// ```
    pub fn new(connection: ConnectionOptions, options: PublisherOptions) -> Self {
        Self::on(Connector::new(connection), options)
    }

    /// A publisher on `connector`'s connection.
    pub(crate) fn on(connector: Connector, options: PublisherOptions) -> Self {
        let channels = (0..options.confirm_channels).map(|_| Mutex::new(None));
        Self {
            inner: Arc::new(Inner {
                connector,
                channels: channels.collect(),
                options,
                exchanges: KnownExchanges::default(),
            }),
        }
    }

    /// Confirm channel `lane`, open, and the connection's frame size.
    async fn channel(&self, lane: usize) -> Result<(Channel, usize), lapin::Error> {
        let mut cached = self.inner.channels[lane].lock().await;
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

    /// Publishes `envelopes` on confirm channel `lane`; drops `queued` once
    /// the first round's messages are queued on the channel.
    async fn publish_all(
        &self,
        lane: usize,
        envelopes: &[&Envelope],
        mut queued: Option<Queued>,
    ) -> Vec<Result<(), PublishError>> {
        let mut slots: Vec<Slot> = envelopes.iter().map(|_| None).collect();
        let mut pending: Option<Vec<Outgoing<'_>>> = None;
        let mut channel_error = None;
        let mut alone = false;
        let mut fruitless = 0;
        while fruitless < MAX_ROUNDS {
            let (ch, frame_max) = match self.channel(lane).await {
                Ok(open) => open,
                Err(error) => {
                    channel_error = Some(error);
                    break;
                }
            };
            let mut batch = match pending.take() {
                Some(batch) => batch,
                None => self.prepare(envelopes, frame_max, &mut slots).await,
            };
            if batch.is_empty() {
                break;
            }
            // After the broker closed a channel over a message it did not
            // name, messages go one at a time until the one at fault is
            // found; the rest then go together again.
            let rest = match alone {
                true => batch.split_off(1),
                false => Vec::new(),
            };
            let sent = batch.len();
            let round = self
                .round(
                    batch,
                    (lane, &ch),
                    frame_max,
                    alone,
                    &mut slots,
                    queued.take(),
                )
                .await;
            fruitless = match round.again.len() < sent {
                true => 0,
                false => fruitless + 1,
            };
            alone = match alone {
                true => !round.refused,
                false => round.closed_over_a_message && !round.refused,
            };
            let mut again = round.again;
            again.extend(rest);
            pending = Some(again);
        }
        for out in pending.into_iter().flatten() {
            let error = out.last_error.or_else(|| channel_error.clone());
            slots[out.index] = error.map(|e| Err(unsettled(e, out.envelope)));
        }
        envelopes
            .iter()
            .zip(slots)
            .map(|(&envelope, slot)| {
                let outcome = match (slot, &channel_error) {
                    (Some(outcome), _) => outcome,
                    (None, Some(error)) => Err(unsettled(error.clone(), envelope)),
                    (None, None) => Err(PublishError::Timeout),
                };
                trace_outcome(envelope, outcome)
            })
            .collect()
    }

    /// The batch ready to send; messages that cannot be sent get their
    /// error in `slots`.
    async fn prepare<'a>(
        &self,
        envelopes: &[&'a Envelope],
        frame_max: usize,
        slots: &mut [Slot],
    ) -> Vec<Outgoing<'a>> {
        let mut batch = Vec::with_capacity(envelopes.len());
        for (index, &envelope) in envelopes.iter().enumerate() {
            match Outgoing::prepare(index, envelope, &self.inner.options, frame_max) {
                Ok(out) => batch.push(out),
                Err(error) => slots[index] = Some(Err(error)),
            }
        }
        let missing = self
            .inner
            .exchanges
            .missing(&self.inner.connector, batch.iter().map(|out| &out.exchange))
            .await;
        if let Some(first) = batch.first() {
            if batch.iter().all(|out| out.routing_key == first.routing_key) {
                tracing::Span::current().record(
                    "messaging.rabbitmq.destination.routing_key",
                    &first.routing_key,
                );
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

    /// Sends `batch` pipelined on one channel and awaits every confirm;
    /// drops `queued` once every message is queued on the channel, ahead of
    /// anything sent on it later.
    async fn round<'a>(
        &self,
        mut batch: Vec<Outgoing<'a>>,
        (lane, ch): (usize, &Channel),
        frame_max: usize,
        alone: bool,
        slots: &mut [Slot],
        queued: Option<Queued>,
    ) -> Round<'a> {
        let sends = batch.iter_mut().map(|out| {
            let options = BasicPublishOptions {
                mandatory: true,
                immediate: false,
            };
            let envelope: &'a Envelope = out.envelope;
            // Sent, not copied: a message sent again is encoded anew.
            let properties = std::mem::take(&mut out.properties);
            ch.basic_publish(
                out.exchange.as_str().into(),
                out.routing_key.as_str().into(),
                options,
                &envelope.payload,
                properties,
            )
        });
        let confirms = sent_in_order(sends.collect()).await;
        drop(queued);
        let deadline = Instant::now() + self.inner.options.confirm_timeout;
        let answers = confirmed_by(deadline, confirms).await;
        let mut round = Round::default();
        for (mut out, sent) in batch.into_iter().zip(answers) {
            round.broken |= !matches!(sent, Ok(Ok(_)));
            if let Ok(Err(error)) = &sent {
                round.closed_over_a_message |= matches!(
                    cause(error),
                    Cause::Refused { .. } | Cause::TooLarge { .. } | Cause::NotFound(_)
                );
            }
            self.forget_if_missing(&out, &sent).await;
            match out.settle(sent, alone) {
                Some(outcome) => {
                    round.refused |= outcome.is_err();
                    slots[out.index] = Some(outcome);
                }
                None => match encode(out.envelope, frame_max) {
                    Ok(properties) => {
                        out.properties = properties;
                        round.again.push(out);
                    }
                    Err(error) => slots[out.index] = Some(Err(error)),
                },
            }
        }
        if round.broken {
            self.inner.channels[lane].lock().await.take();
        }
        round
    }

    /// Forgets the exchange of a message the broker found no exchange for.
    async fn forget_if_missing(&self, out: &Outgoing<'_>, sent: &Sent) {
        if let Ok(Err(error)) = sent {
            if let Cause::NotFound(text) = cause(error) {
                if names_exchange(&text, &out.exchange) {
                    self.inner.exchanges.forget(&out.exchange).await;
                }
            }
        }
    }
}

fn unsettled(error: lapin::Error, envelope: &Envelope) -> PublishError {
    publish_error(error, &envelope.destination, envelope.payload.len())
}

impl Publisher for RabbitPublisher {
    /// Drops the batch's token once each confirm channel has queued its
    /// share of the batch: a key always takes the same channel, and a
    /// channel's messages reach the broker in the order they were queued. A
    /// message sent again after the broker closed its channel over another
    /// goes behind whatever was queued meanwhile.
    async fn send(&self, mut batch: PublishBatch<'_>) -> Vec<Result<(), PublishError>> {
        let queued = batch.take_queued();
        let lanes = Lanes::of(batch.envelopes(), self.inner.channels.len());
        let published = lanes
            .iter()
            .map(|(lane, envelopes)| self.publish_all(lane, envelopes, queued.clone()));
        let published = join_all(published);
        drop(queued);
        lanes.merge(published.await)
    }

    fn messaging_system(&self) -> &'static str {
        "rabbitmq"
    }
}
