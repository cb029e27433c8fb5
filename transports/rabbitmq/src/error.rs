//! Every lapin error is turned into a port error here, and only here.

use lapin::ErrorKind;
use lapin::protocol::{AMQPErrorKind, AMQPSoftError};
use tidings_core::{AckError, PublishError, SourceError, SpecError};

use crate::queue::QueueOptionsError;

/// Declaring or deleting topology failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TopologyError {
    /// A queue or exchange name is not legal.
    #[error("invalid topology name")]
    Name(#[from] SpecError),
    /// The broker could not be reached.
    #[error("cannot connect to the broker")]
    Connect(#[source] lapin::Error),
    /// The queue options do not go together; nothing was sent to the
    /// broker.
    #[error(transparent)]
    Options(#[from] QueueOptionsError),
    /// A queue exists with another value of an argument than the one
    /// declared (the broker's `PRECONDITION_FAILED - inequivalent arg`),
    /// typically one an operator or a policy-less script set. Change the
    /// named setting to match, or let the operator own the topology with
    /// [`TopologyMode::Verify`](crate::TopologyMode::Verify).
    #[error(
        "queue {queue:?} exists with {argument} {current} but tidings declares it {asked}: {hint}",
        current = shown(.current),
        asked = shown(.asked),
        hint = hint(.setting)
    )]
    Inequivalent {
        /// The queue.
        queue: String,
        /// The argument, such as `x-single-active-consumer`.
        argument: String,
        /// The value tidings declared; `None` for not set.
        asked: Option<String>,
        /// The value the queue has; `None` for not set.
        current: Option<String>,
        /// The setting that decides the argument, such as
        /// `QueueOptions::single_active_consumer`; `None` when tidings
        /// fixes it.
        setting: Option<&'static str>,
    },
    /// In [`TopologyMode::Verify`](crate::TopologyMode::Verify), queues or
    /// exchanges tidings needs do not exist.
    #[error("the topology lacks {}", .missing.join(", "))]
    Missing {
        /// Each missing queue or exchange, with what it is for.
        missing: Vec<String>,
    },
    /// The broker refused a declaration.
    #[error("cannot {action} {name:?}")]
    Broker {
        /// What was being done (`declare queue`, `bind queue`..).
        action: &'static str,
        /// The exchange or queue.
        name: String,
        /// The broker's answer.
        #[source]
        source: lapin::Error,
    },
}

fn shown(value: &Option<String>) -> String {
    value
        .as_deref()
        .map_or_else(|| "not set".to_owned(), |value| format!("= {value}"))
}

fn hint(setting: &Option<&'static str>) -> String {
    match setting {
        Some(setting) => format!(
            "change {setting} to match, or leave the queue to its operator with TopologyMode::Verify"
        ),
        None => "tidings sets this argument itself: delete the queue, or leave it to its \
                 operator with TopologyMode::Verify"
            .to_owned(),
    }
}

/// What a lapin error means for the message or delivery at hand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Cause {
    /// The connection is gone or not open.
    Connection,
    /// The broker closed the channel: a named resource does not exist.
    NotFound(String),
    /// The broker closed the channel: a message exceeded its size limit.
    TooLarge { limit: Option<usize> },
    /// The broker closed the channel over something sent on it, such as a
    /// header it will not take or an exchange the user may not publish to.
    /// `lasting` when sending the same again cannot succeed.
    Refused { text: String, lasting: bool },
    /// The channel is closed or unusable.
    Channel(String),
    /// Anything else.
    Other,
}

/// Reads a lapin error.
pub(crate) fn cause(error: &lapin::Error) -> Cause {
    match error.kind() {
        ErrorKind::IOError(_)
        | ErrorKind::RuntimeShutdownError(_)
        | ErrorKind::MissingHeartbeatError
        | ErrorKind::InvalidConnectionState(_) => Cause::Connection,
        ErrorKind::ProtocolError(amqp) => {
            let text = amqp.get_message().to_string();
            match amqp.kind() {
                AMQPErrorKind::Hard(_) => Cause::Connection,
                AMQPErrorKind::Soft(AMQPSoftError::NOTFOUND) => Cause::NotFound(text),
                AMQPErrorKind::Soft(AMQPSoftError::PRECONDITIONFAILED)
                    if text.contains("message size") =>
                {
                    Cause::TooLarge {
                        limit: size_limit(&text),
                    }
                }
                AMQPErrorKind::Soft(AMQPSoftError::CONTENTTOOLARGE) => {
                    Cause::TooLarge { limit: None }
                }
                AMQPErrorKind::Soft(soft) => Cause::Refused {
                    text,
                    lasting: *soft != AMQPSoftError::RESOURCELOCKED,
                },
            }
        }
        ErrorKind::InvalidChannelState(..) | ErrorKind::InvalidChannel(_) => {
            Cause::Channel(error.to_string())
        }
        _ => Cause::Other,
    }
}

/// The limit in "message size 200 is larger than configured max size 100".
fn size_limit(text: &str) -> Option<usize> {
    let (_, tail) = text.split_once("max size")?;
    tail.split(|c: char| !c.is_ascii_digit())
        .find(|part| !part.is_empty())?
        .parse()
        .ok()
}

/// Whether the broker's "no exchange 'name'" text names `exchange`.
pub(crate) fn names_exchange(text: &str, exchange: &str) -> bool {
    text.contains(&format!("exchange '{exchange}'"))
}

/// A publish failure for a message sent to `destination`.
pub(crate) fn publish_error(error: lapin::Error, destination: &str, size: usize) -> PublishError {
    match cause(&error) {
        Cause::Connection => PublishError::Unavailable(Box::new(error)),
        Cause::NotFound(_) => PublishError::Unroutable {
            destination: destination.to_owned(),
        },
        Cause::TooLarge { limit } => PublishError::TooLarge {
            size,
            limit: limit.unwrap_or(size.saturating_sub(1)),
        },
        Cause::Refused { .. } | Cause::Channel(_) | Cause::Other => {
            PublishError::Transport(Box::new(error))
        }
    }
}

/// A failure to subscribe to or consume `queue`.
pub(crate) fn source_error(error: lapin::Error, queue: &str) -> SourceError {
    match cause(&error) {
        Cause::NotFound(_) => SourceError::NotFound {
            queue: queue.to_owned(),
        },
        Cause::Connection | Cause::Refused { .. } | Cause::Channel(_) => {
            SourceError::Unavailable(Box::new(error))
        }
        Cause::TooLarge { .. } | Cause::Other => SourceError::Transport(Box::new(error)),
    }
}

/// A failure to settle a delivery.
pub(crate) fn ack_error(error: lapin::Error) -> AckError {
    match cause(&error) {
        Cause::Connection => AckError::Unavailable(Box::new(error)),
        Cause::Refused { .. } | Cause::Channel(_) => AckError::Expired,
        Cause::NotFound(_) | Cause::TooLarge { .. } | Cause::Other => {
            AckError::Transport(Box::new(error))
        }
    }
}

/// A republish made while settling that the broker did not accept.
pub(crate) fn ack_publish_error(error: PublishError) -> AckError {
    match error {
        PublishError::Unavailable(source) => AckError::Unavailable(source),
        other => AckError::Transport(Box::new(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_broker_size_limit() {
        let text =
            "PRECONDITION_FAILED - message size 2048 is larger than configured max size 1024";
        assert_eq!(size_limit(text), Some(1024));
        assert_eq!(size_limit("PRECONDITION_FAILED - other"), None);
    }

    #[test]
    fn matches_the_missing_exchange() {
        let text = "NOT_FOUND - no exchange 'orders_x' in vhost '/'";
        assert!(names_exchange(text, "orders_x"));
        assert!(!names_exchange(text, "orders"));
    }
}
