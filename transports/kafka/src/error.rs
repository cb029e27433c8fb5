//! Every rdkafka error is turned into a port error here, and only here.

use rdkafka::error::{KafkaError, RDKafkaErrorCode as Code};
use tidings_core::{AckError, PublishError, SourceError};

/// Creating or deleting topics failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TopologyError {
    /// A topic name is not legal.
    #[error("invalid topic name: {0}")]
    Name(String),
    /// The broker could not be reached or the client not created.
    #[error("cannot reach the kafka brokers")]
    Connect(#[source] KafkaError),
    /// The broker refused the request, for example because a topic exists
    /// with another partition count.
    #[error("cannot {action} {topic:?}: {reason}")]
    Broker {
        /// What was being done (`create topic`, `delete topic`).
        action: &'static str,
        /// The topic.
        topic: String,
        /// The broker's answer.
        reason: String,
    },
}

/// A client could not be created from its options.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// librdkafka refused the configuration.
    #[error("invalid kafka client configuration")]
    Config(#[source] KafkaError),
}

/// Whether a broker-side error code means the brokers cannot be reached.
pub(crate) fn is_unreachable(code: Code) -> bool {
    matches!(
        code,
        Code::AllBrokersDown
            | Code::BrokerTransportFailure
            | Code::BrokerNotAvailable
            | Code::NetworkException
            | Code::RequestTimedOut
            | Code::OperationTimedOut
            | Code::Resolve
            | Code::LeaderNotAvailable
            | Code::NotLeaderForPartition
    )
}

/// A publish failure for a record of `size` bytes sent to `topic`, where
/// the client refuses records over `limit` bytes.
pub(crate) fn publish_error(
    error: KafkaError,
    topic: &str,
    size: usize,
    limit: usize,
) -> PublishError {
    let Some(code) = error.rdkafka_error_code() else {
        return PublishError::Transport(Box::new(error));
    };
    match code {
        Code::MessageSizeTooLarge | Code::InvalidMessageSize => PublishError::TooLarge {
            size,
            limit: limit.min(size.saturating_sub(1)),
        },
        Code::UnknownTopic | Code::UnknownTopicOrPartition => PublishError::Unroutable {
            destination: topic.to_owned(),
        },
        Code::MessageTimedOut => PublishError::Timeout,
        Code::QueueFull
        | Code::ThrottlingQuotaExceeded
        | Code::NotEnoughReplicas
        | Code::NotEnoughReplicasAfterAppend => PublishError::Refused {
            reason: code.to_string(),
        },
        code if is_unreachable(code) => PublishError::Unavailable(Box::new(error)),
        _ => PublishError::Transport(Box::new(error)),
    }
}

/// A failure to look up or consume `topic`.
pub(crate) fn source_error(error: KafkaError, topic: &str) -> SourceError {
    match error.rdkafka_error_code() {
        Some(Code::UnknownTopic | Code::UnknownTopicOrPartition) => SourceError::NotFound {
            queue: topic.to_owned(),
        },
        Some(code) if is_unreachable(code) => SourceError::Unavailable(Box::new(error)),
        _ => SourceError::Transport(Box::new(error)),
    }
}

/// A republish made while settling that the broker did not accept.
pub(crate) fn ack_error(error: PublishError) -> AckError {
    match error {
        PublishError::Unavailable(source) => AckError::Unavailable(source),
        other => AckError::Transport(Box::new(other)),
    }
}

/// A failure of a topic administration request.
pub(crate) fn topology_error(
    error: KafkaError,
    action: &'static str,
    topic: &str,
) -> TopologyError {
    match error.rdkafka_error_code() {
        Some(code) if is_unreachable(code) => TopologyError::Connect(error),
        _ => TopologyError::Broker {
            action,
            topic: topic.to_owned(),
            reason: error.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn production_errors_map_to_their_class() {
        let produce = |code| publish_error(KafkaError::MessageProduction(code), "t", 10, 5);
        assert!(matches!(
            produce(Code::MessageSizeTooLarge),
            PublishError::TooLarge { size: 10, limit: 5 }
        ));
        assert!(matches!(
            produce(Code::UnknownTopicOrPartition),
            PublishError::Unroutable { .. }
        ));
        assert!(matches!(
            produce(Code::MessageTimedOut),
            PublishError::Timeout
        ));
        assert!(matches!(
            produce(Code::AllBrokersDown),
            PublishError::Unavailable(_)
        ));
        assert!(produce(Code::QueueFull).is_transient());
        assert!(!produce(Code::MessageSizeTooLarge).is_transient());
    }
}
