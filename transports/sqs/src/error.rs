//! Every AWS SDK error is turned into a port error here, and only here.

use std::time::Duration;

use aws_sdk_sqs::error::{ProvideErrorMetadata, SdkError};
use tidings_core::{AckError, BoxError, PublishError, SourceError, SpecError};

/// Declaring or deleting queues failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TopologyError {
    /// A queue name is not legal for SQS.
    #[error("invalid queue name")]
    Name(#[from] SpecError),
    /// SQS refused or did not answer.
    #[error("cannot {action} queue {name:?}")]
    Sqs {
        /// What was being done.
        action: &'static str,
        /// The queue.
        name: String,
        /// What SQS said.
        #[source]
        source: BoxError,
    },
}

/// A request that got no answer within the configured request timeout.
#[derive(Debug, thiserror::Error)]
#[error("no answer from sqs within {0:?}")]
pub(crate) struct RequestTimeout(pub(crate) Duration);

/// What went wrong, as far as the ports care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// No response: connection refused or reset, DNS, a 5xx answer.
    Unavailable,
    /// No answer in time; the request may have been applied.
    Timeout,
    /// The queue does not exist.
    QueueMissing,
    /// The receipt handle no longer names an in-flight message.
    ReceiptInvalid,
    /// SQS throttled the request.
    Throttled,
    /// The credentials were refused or lack the permission; fixing them
    /// makes the same request work.
    Denied,
    /// The message or batch is over the size limit.
    TooLarge,
    /// SQS refused the request as malformed; sending it again cannot help.
    Rejected,
    /// Anything else.
    Other,
}

/// An SQS failure with its kind.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) kind: Kind,
    pub(crate) source: BoxError,
}

impl Failure {
    pub(crate) fn new(kind: Kind, source: impl Into<BoxError>) -> Self {
        Self {
            kind,
            source: source.into(),
        }
    }

    pub(crate) fn timeout(after: Duration) -> Self {
        Self::new(Kind::Timeout, RequestTimeout(after))
    }

    /// A failure of the same kind with the same text, for reporting one
    /// failure on several messages.
    pub(crate) fn copy(&self) -> Self {
        Self::new(self.kind, self.describe())
    }

    /// The failure and its causes, for logs and reasons.
    pub(crate) fn describe(&self) -> String {
        tidings_core::port::error_chain(self.source.as_ref())
    }
}

/// Classifies an SDK error.
pub(crate) fn classify<E>(error: SdkError<E>) -> Failure
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let kind = match &error {
        SdkError::TimeoutError(_) => Kind::Timeout,
        SdkError::DispatchFailure(_) => Kind::Unavailable,
        SdkError::ConstructionFailure(_) => Kind::Rejected,
        SdkError::ServiceError(service) => {
            let status = service.raw().status().as_u16();
            let code = error.code().unwrap_or_default();
            let message = error.message().unwrap_or_default();
            match kind_of_code(code, message) {
                Kind::Other if status >= 500 => Kind::Unavailable,
                Kind::Other if status == 401 || status == 403 => Kind::Denied,
                Kind::Other if (400..500).contains(&status) => Kind::Rejected,
                kind => kind,
            }
        }
        _ => Kind::Other,
    };
    let text = match (error.code(), error.message()) {
        (Some(code), Some(message)) => format!("{code}: {message}"),
        _ => aws_sdk_sqs::error::DisplayErrorContext(&error).to_string(),
    };
    Failure::new(kind, text)
}

/// The kind an SQS error code (of a call or of a batch entry) stands for;
/// [`Kind::Other`] when the code says nothing the ports care about.
pub(crate) fn kind_of_code(code: &str, message: &str) -> Kind {
    let code = code.trim_start_matches("AWS.SimpleQueueService.");
    match code {
        "NonExistentQueue" | "QueueDoesNotExist" => Kind::QueueMissing,
        "ReceiptHandleIsInvalid" | "InvalidReceiptHandle" | "MessageNotInflight" => {
            Kind::ReceiptInvalid
        }
        "RequestThrottled" | "ThrottlingException" | "KmsThrottled" | "OverLimit" => {
            Kind::Throttled
        }
        "BatchRequestTooLong" => Kind::TooLarge,
        "InvalidParameterValue" if message.contains("shorter than") => Kind::TooLarge,
        "InvalidParameterValue" if message.to_ascii_lowercase().contains("receipt") => {
            Kind::ReceiptInvalid
        }
        "ServiceUnavailable" | "InternalError" | "InternalFailure" => Kind::Unavailable,
        "AccessDenied"
        | "AccessDeniedException"
        | "InvalidClientTokenId"
        | "SignatureDoesNotMatch"
        | "UnrecognizedClientException"
        | "ExpiredToken"
        | "MissingAuthenticationToken"
        | "InvalidSecurity"
        | "KmsAccessDenied" => Kind::Denied,
        _ => Kind::Other,
    }
}

/// A failed batch entry as a failure: its code decides, then who was at
/// fault.
pub(crate) fn entry_failure(code: &str, message: &str, sender_fault: bool) -> Failure {
    let kind = match kind_of_code(code, message) {
        Kind::Other if sender_fault => Kind::Rejected,
        kind => kind,
    };
    let text = if message.is_empty() {
        code.to_owned()
    } else {
        format!("{code}: {message}")
    };
    Failure::new(kind, text)
}

/// A publish failure as the publisher port's error.
pub(crate) fn publish_error(
    failure: Failure,
    destination: &str,
    size: usize,
    limit: usize,
) -> PublishError {
    match failure.kind {
        Kind::QueueMissing => PublishError::Unroutable {
            destination: destination.to_owned(),
        },
        Kind::TooLarge => PublishError::TooLarge { size, limit },
        Kind::Rejected => PublishError::Invalid {
            reason: failure.describe(),
        },
        Kind::Throttled | Kind::Denied => PublishError::Refused {
            reason: failure.describe(),
        },
        Kind::Timeout => PublishError::Timeout,
        Kind::Unavailable => PublishError::Unavailable(failure.source),
        Kind::ReceiptInvalid | Kind::Other => PublishError::Transport(failure.source),
    }
}

/// A receive failure as the source port's error.
pub(crate) fn source_error(failure: Failure, queue: &str) -> SourceError {
    match failure.kind {
        Kind::QueueMissing => SourceError::NotFound {
            queue: queue.to_owned(),
        },
        Kind::Unavailable | Kind::Timeout => SourceError::Unavailable(failure.source),
        _ => SourceError::Transport(failure.source),
    }
}

/// A settlement failure as the acker port's error.
pub(crate) fn ack_error(failure: Failure) -> AckError {
    match failure.kind {
        Kind::ReceiptInvalid | Kind::QueueMissing => AckError::Expired,
        Kind::Unavailable | Kind::Timeout => AckError::Unavailable(failure.source),
        _ => AckError::Transport(failure.source),
    }
}

/// Runs an SDK call with a deadline and classifies its error.
pub(crate) async fn call<T, E, F>(timeout: Duration, request: F) -> Result<T, Failure>
where
    F: std::future::Future<Output = Result<T, SdkError<E>>>,
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    match tokio::time::timeout(timeout, request).await {
        Ok(Ok(output)) => Ok(output),
        Ok(Err(error)) => Err(classify(error)),
        Err(_) => Err(Failure::timeout(timeout)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_map_to_kinds() {
        assert_eq!(
            kind_of_code("AWS.SimpleQueueService.NonExistentQueue", ""),
            Kind::QueueMissing
        );
        assert_eq!(kind_of_code("QueueDoesNotExist", ""), Kind::QueueMissing);
        assert_eq!(
            kind_of_code("ReceiptHandleIsInvalid", ""),
            Kind::ReceiptInvalid
        );
        assert_eq!(
            kind_of_code(
                "InvalidParameterValue",
                "Reason: Message must be shorter than 262144 bytes."
            ),
            Kind::TooLarge
        );
        assert_eq!(kind_of_code("RequestThrottled", ""), Kind::Throttled);
        assert_eq!(kind_of_code("AccessDenied", ""), Kind::Denied);
        assert_eq!(kind_of_code("Whatever", ""), Kind::Other);
    }

    #[test]
    fn entry_faults_decide_permanence() {
        let sender = entry_failure("InvalidParameterValue", "bad group id", true);
        assert_eq!(sender.kind, Kind::Rejected);
        let service = entry_failure("InternalError", "", false);
        assert_eq!(service.kind, Kind::Unavailable);
        let error = publish_error(sender, "q", 1, 2);
        assert!(!error.is_transient());
        let error = publish_error(service, "q", 1, 2);
        assert!(error.is_transient());
        let denied = Failure::new(Kind::Denied, "bad credentials");
        assert!(publish_error(denied, "q", 1, 2).is_transient());
    }

    #[test]
    fn missing_queues_are_unroutable_and_not_found() {
        let missing = || Failure::new(Kind::QueueMissing, "gone");
        assert!(matches!(
            publish_error(missing(), "q", 1, 2),
            PublishError::Unroutable { .. }
        ));
        assert!(matches!(
            source_error(missing(), "q"),
            SourceError::NotFound { .. }
        ));
        assert!(matches!(ack_error(missing()), AckError::Expired));
    }
}
