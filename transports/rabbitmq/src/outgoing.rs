//! One message on its way out: where it goes, its properties, and what
//! its confirm means.

use lapin::{BasicProperties, Confirmation};
use tidings_core::{Envelope, PublishError, reserved};

use crate::error::{Cause, cause, names_exchange};
use crate::names::exchange_name;
use crate::options::{PublisherOptions, RoutingKey};
use crate::properties::{encode, short};

/// A message ready to send, with its place in the batch.
pub(crate) struct Outgoing<'a> {
    pub(crate) index: usize,
    pub(crate) envelope: &'a Envelope,
    pub(crate) exchange: String,
    pub(crate) routing_key: String,
    pub(crate) properties: BasicProperties,
    /// Why the last attempt to send it did not settle it.
    pub(crate) last_error: Option<lapin::Error>,
}

/// What a sent message came to: its confirm, a lapin error, or no answer
/// in time.
pub(crate) type Sent = Result<Result<Confirmation, lapin::Error>, ()>;

impl<'a> Outgoing<'a> {
    /// Where `envelope` goes and its properties, or why it cannot go.
    pub(crate) fn prepare(
        index: usize,
        envelope: &'a Envelope,
        options: &PublisherOptions,
        frame_max: usize,
    ) -> Result<Self, PublishError> {
        let size = envelope.payload.len();
        let limit = options.max_message_size;
        if size > limit {
            return Err(PublishError::TooLarge { size, limit });
        }
        refuse_reserved(envelope)?;
        let destination = &envelope.destination;
        let settings = options
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
        Ok(Self {
            index,
            envelope,
            exchange,
            routing_key,
            properties: encode(envelope, frame_max)?,
            last_error: None,
        })
    }

    /// The message's outcome, or `None` when it should be sent again: the
    /// broker closed the channel, maybe because of another message. Sent
    /// `alone` on its channel, a message the broker closed the channel over
    /// is the one at fault and gets the broker's refusal as its error.
    pub(crate) fn settle(&mut self, sent: Sent, alone: bool) -> Option<Result<(), PublishError>> {
        let destination = || self.envelope.destination.clone();
        let size = self.envelope.payload.len();
        let outcome = match sent {
            Err(()) => Err(PublishError::Timeout),
            Ok(Ok(Confirmation::Ack(None))) => Ok(()),
            Ok(Ok(Confirmation::Ack(Some(_)) | Confirmation::Nack(Some(_)))) => {
                Err(PublishError::Unroutable {
                    destination: destination(),
                })
            }
            Ok(Ok(Confirmation::Nack(None))) => Err(PublishError::Refused {
                reason: "the broker sent a negative publisher confirm".to_owned(),
            }),
            Ok(Ok(Confirmation::NotRequested)) => Err(PublishError::Refused {
                reason: "the channel is not in confirm mode".to_owned(),
            }),
            Ok(Err(error)) => match cause(&error) {
                Cause::NotFound(text) if names_exchange(&text, &self.exchange) => {
                    Err(PublishError::Unroutable {
                        destination: destination(),
                    })
                }
                Cause::TooLarge { limit: Some(limit) } if size > limit => {
                    Err(PublishError::TooLarge { size, limit })
                }
                Cause::TooLarge { limit } if alone => Err(PublishError::TooLarge {
                    size,
                    limit: limit.unwrap_or(size.saturating_sub(1)),
                }),
                Cause::Refused { text, lasting } if alone => Err(match lasting {
                    true => PublishError::Invalid {
                        reason: format!("the broker refused it: {text}"),
                    },
                    false => PublishError::Refused { reason: text },
                }),
                _ => {
                    self.last_error = Some(error);
                    return None;
                }
            },
        };
        Some(outcome)
    }
}

/// Refuses a header the envelope, the consumer or the broker gives a
/// meaning of its own. Staging refuses them already; this catches events
/// that reached the store some other way.
fn refuse_reserved(envelope: &Envelope) -> Result<(), PublishError> {
    reserved::check(envelope.headers.keys(), &reserved::ALL)
        .map_err(|reason| PublishError::Invalid { reason })
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::options::DestinationOptions;

    fn envelope(key: Option<&str>) -> Envelope {
        let mut env = Envelope::new("r", "orders", "t", Bytes::new(), "text/plain");
        env.ordering_key = key.map(str::to_owned);
        env
    }

    #[test]
    fn routes_to_the_destination_exchange_by_default() {
        let env = envelope(Some("k1"));
        let out = Outgoing::prepare(0, &env, &PublisherOptions::default(), 131_072).unwrap();
        assert_eq!(
            (out.exchange.as_str(), out.routing_key.as_str()),
            ("orders", "orders")
        );
    }

    #[test]
    fn routes_by_ordering_key_where_the_destination_asks() {
        let settings = DestinationOptions::default()
            .exchange("orders-hash")
            .routing_key(RoutingKey::OrderingKey);
        let options = PublisherOptions::default().destination("orders", settings);
        let keyed = envelope(Some("k1"));
        let out = Outgoing::prepare(0, &keyed, &options, 131_072).unwrap();
        assert_eq!(
            (out.exchange.as_str(), out.routing_key.as_str()),
            ("orders-hash", "k1")
        );
        let unkeyed = envelope(None);
        let out = Outgoing::prepare(0, &unkeyed, &options, 131_072).unwrap();
        assert_eq!(out.routing_key, "orders");
    }

    #[test]
    fn reserved_headers_are_refused_before_sending() {
        for name in [
            "CC",
            "x-delivery-count",
            "x-tidings-prior-deliveries",
            "ce-id",
        ] {
            let mut env = envelope(None);
            env.headers.insert(name.to_owned(), "x".to_owned());
            let err = Outgoing::prepare(0, &env, &PublisherOptions::default(), 131_072)
                .err()
                .unwrap();
            assert!(
                matches!(&err, PublishError::Invalid { reason } if reason.contains(name)),
                "{err:?}"
            );
        }
    }

    #[test]
    fn ordering_keys_longer_than_a_routing_key_are_refused() {
        let settings = DestinationOptions::default().routing_key(RoutingKey::OrderingKey);
        let options = PublisherOptions::default().destination("orders", settings);
        let env = envelope(Some(&"k".repeat(256)));
        let err = Outgoing::prepare(0, &env, &options, 131_072).err().unwrap();
        assert!(matches!(err, PublishError::Invalid { reason } if reason.contains("routing key")));
    }
}
