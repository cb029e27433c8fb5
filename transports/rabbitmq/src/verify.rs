//! Checking, with passive declares, that an operator's topology has what
//! tidings needs.

use lapin::options::{ExchangeDeclareOptions, QueueDeclareOptions};
use lapin::types::FieldTable;
use lapin::{Channel, ExchangeKind};

use crate::connection::Connector;
use crate::error::{Cause, TopologyError, cause};
use crate::names::{dead_letter_exchange, dead_letter_queue, delay_queue, exchange_name};

/// A queue or an exchange.
#[derive(Clone, Copy)]
enum Thing {
    Queue,
    Exchange,
}

/// Checks that every queue and exchange [`Topology`](crate::Topology)
/// declares for `queue` exists; a missing one closes the channel, so each
/// check after one runs on a new channel.
pub(crate) async fn verify_queue(connector: &Connector, queue: &str) -> Result<(), TopologyError> {
    let needed = [
        (Thing::Queue, queue.to_owned(), "consumed"),
        (Thing::Exchange, exchange_name(queue), "published to"),
        (Thing::Exchange, dead_letter_exchange(queue), "dead letters"),
        (Thing::Queue, dead_letter_queue(queue), "dead letters"),
        (Thing::Queue, delay_queue(queue), "delayed redeliveries"),
    ];
    let mut missing = Vec::new();
    let mut channel = open(connector).await?;
    for (thing, name, purpose) in needed {
        match exists(&channel, thing, &name).await {
            Ok(()) => {}
            Err(error) if matches!(cause(&error), Cause::NotFound(_)) => {
                let kind = match thing {
                    Thing::Queue => "queue",
                    Thing::Exchange => "exchange",
                };
                missing.push(format!("{kind} {name:?} ({purpose})"));
                channel = open(connector).await?;
            }
            Err(source) => {
                return Err(TopologyError::Broker {
                    action: "verify",
                    name,
                    source,
                });
            }
        }
    }
    let _ = channel.close(200, "OK".into()).await;
    if missing.is_empty() {
        Ok(())
    } else {
        Err(TopologyError::Missing { missing })
    }
}

async fn open(connector: &Connector) -> Result<Channel, TopologyError> {
    connector.channel().await.map_err(TopologyError::Connect)
}

async fn exists(channel: &Channel, thing: Thing, name: &str) -> Result<(), lapin::Error> {
    match thing {
        Thing::Queue => {
            let options = QueueDeclareOptions {
                passive: true,
                ..QueueDeclareOptions::default()
            };
            channel
                .queue_declare(name.into(), options, FieldTable::default())
                .await
                .map(drop)
        }
        Thing::Exchange => {
            let options = ExchangeDeclareOptions {
                passive: true,
                ..ExchangeDeclareOptions::default()
            };
            channel
                .exchange_declare(
                    name.into(),
                    ExchangeKind::Direct,
                    options,
                    FieldTable::default(),
                )
                .await
        }
    }
}
