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
    /// TLS or SASL with the brokers failed.
    #[error(transparent)]
    Security(#[from] SecurityError),
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

/// TLS or SASL with a broker failed: each message names the setting to
/// look at. librdkafka retries such connections forever, so the clients
/// report this error instead of an unreachable broker: at once from
/// `connect`, and as the source of `Unavailable` from a publish or a
/// subscription.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SecurityError {
    /// No CA the client trusts signed the broker's certificate.
    #[error(
        "the certificate of broker {broker} is not trusted by the CA in `ssl.ca.location` \
         (KafkaTls::ca_file): {detail}"
    )]
    Untrusted {
        /// The broker, `host:port`.
        broker: String,
        /// What the TLS library said.
        detail: String,
    },
    /// The broker's certificate has expired (or is not valid yet).
    #[error(
        "the certificate of broker {broker} has expired or is not valid yet ({detail}); \
         renew it on the broker: `ssl.ca.location` (KafkaTls::ca_file) is not the cause"
    )]
    Expired {
        /// The broker, `host:port`.
        broker: String,
        /// What the TLS library said.
        detail: String,
    },
    /// The broker's certificate does not name the host dialled.
    #[error(
        "the certificate of broker {broker} does not name the host dialled in \
         `bootstrap.servers` ({detail}); dial a name it holds, or turn off \
         `ssl.endpoint.identification.algorithm` (KafkaTls::verify_hostname)"
    )]
    HostName {
        /// The broker, `host:port`.
        broker: String,
        /// What the TLS library said.
        detail: String,
    },
    /// The broker asks for a client certificate and none was sent.
    #[error(
        "broker {broker} requires a client certificate: set `ssl.certificate.location` \
         and `ssl.key.location` (KafkaTls::client_certificate): {detail}"
    )]
    ClientCertificateMissing {
        /// The broker, `host:port`.
        broker: String,
        /// What the TLS library said.
        detail: String,
    },
    /// The broker refused the client certificate sent.
    #[error(
        "broker {broker} rejected the client certificate in `ssl.certificate.location` \
         (KafkaTls::client_certificate): {detail}"
    )]
    ClientCertificateRejected {
        /// The broker, `host:port`.
        broker: String,
        /// What the TLS library said.
        detail: String,
    },
    /// Another TLS failure.
    #[error(
        "tls with broker {broker} failed; check `security.protocol` and the `ssl.*` \
         settings (KafkaTls): {detail}"
    )]
    Tls {
        /// The broker, `host:port`.
        broker: String,
        /// What the TLS library said.
        detail: String,
    },
    /// The broker does not offer the SASL mechanism asked for.
    #[error(
        "broker {broker} does not offer the sasl mechanism in `sasl.mechanisms` \
         (KafkaSasl::new): {detail}"
    )]
    SaslMechanism {
        /// The broker, `host:port`.
        broker: String,
        /// What librdkafka said.
        detail: String,
    },
    /// The broker refused the SASL login.
    #[error(
        "broker {broker} refused the sasl login: check `sasl.username` and \
         `sasl.password` (KafkaSasl::new): {detail}"
    )]
    Authentication {
        /// The broker, `host:port`.
        broker: String,
        /// What librdkafka said.
        detail: String,
    },
}

/// A client could not talk to the brokers at startup.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// TLS or SASL with the brokers failed.
    #[error(transparent)]
    Security(#[from] SecurityError),
    /// No broker answered within the request timeout.
    #[error("cannot reach the kafka brokers at {brokers}")]
    Unreachable {
        /// The `bootstrap.servers` dialled.
        brokers: String,
        /// librdkafka's error.
        #[source]
        source: KafkaError,
    },
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

/// A request that failed.
#[derive(Debug)]
pub(crate) enum Failed {
    Security(SecurityError),
    Kafka(KafkaError),
    /// The thread running it panicked.
    Lost(tokio::task::JoinError),
}

/// A failed publish request, explained by a TLS or SASL failure where
/// there was one.
pub(crate) fn failed_publish(
    failed: Failed,
    topic: &str,
    size: usize,
    limit: usize,
) -> PublishError {
    match failed {
        Failed::Security(failure) => PublishError::Unavailable(Box::new(failure)),
        Failed::Kafka(error) => publish_error(error, topic, size, limit),
        Failed::Lost(lost) => PublishError::Transport(Box::new(lost)),
    }
}

/// A failed startup check of the brokers at `brokers`.
pub(crate) fn failed_connect(failed: Failed, brokers: &str) -> ConnectError {
    match failed {
        Failed::Security(failure) => ConnectError::Security(failure),
        Failed::Kafka(source) => ConnectError::Unreachable {
            brokers: brokers.to_owned(),
            source,
        },
        Failed::Lost(lost) => ConnectError::Unreachable {
            brokers: brokers.to_owned(),
            source: KafkaError::Canceled,
        }
        .log_lost(&lost),
    }
}

impl ConnectError {
    fn log_lost(self, lost: &tokio::task::JoinError) -> Self {
        tracing::error!(error = %lost, "the metadata request's thread was lost");
        self
    }
}

/// A failed topic administration request.
pub(crate) fn failed_topology(failed: Failed, action: &'static str, topic: &str) -> TopologyError {
    match failed {
        Failed::Security(failure) => TopologyError::Security(failure),
        Failed::Kafka(error) => topology_error(error, action, topic),
        Failed::Lost(lost) => TopologyError::Broker {
            action,
            topic: topic.to_owned(),
            reason: lost.to_string(),
        },
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
