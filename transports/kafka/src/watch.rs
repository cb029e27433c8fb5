//! Watching a client's broker connections for TLS and SASL failures.
//!
//! librdkafka retries a connection whose TLS handshake or SASL login
//! fails, forever, and a request made meanwhile fails as a transport
//! failure or a timeout. Its error callback says what went wrong; the
//! [`Watch`] keeps the last such failure, as a [`SecurityError`], so a
//! request that fails can say why, and one in flight can fail at once.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::config::RDKafkaLogLevel;
use rdkafka::error::{KafkaError, KafkaResult, RDKafkaErrorCode as Code};
use rdkafka::{ClientConfig, ClientContext};

use crate::diagnose::{Probe, Problem};
use crate::error::{Failed, SecurityError};

/// How long a failure explains a failed request.
const RECENT: Duration = Duration::from_secs(60);
/// How long a request may take before a failure seen before it began is
/// taken to be its cause.
const STILL_FAILING: Duration = Duration::from_secs(1);
/// How often a request in flight looks for a new failure.
const WATCH_POLL: Duration = Duration::from_millis(25);

/// A client's context: keeps its last TLS or SASL failure.
#[derive(Clone)]
pub(crate) struct Watch {
    last: Arc<Mutex<Option<(Instant, SecurityError)>>>,
    probe: Arc<Probe>,
}

impl Watch {
    /// A watch for a client with `config`.
    pub(crate) fn new(config: &ClientConfig) -> Self {
        Self {
            last: Arc::default(),
            probe: Arc::new(Probe::new(config)),
        }
    }

    /// Runs the blocking `request` on a thread of its own; see
    /// [`race`](Self::race).
    pub(crate) async fn request<T: Send + 'static>(
        &self,
        request: impl FnOnce() -> KafkaResult<T> + Send + 'static,
    ) -> Result<T, Failed> {
        let task = tokio::task::spawn_blocking(request);
        self.race(async move {
            match task.await {
                Ok(result) => result.map_err(Failed::Kafka),
                Err(lost) => Err(Failed::Lost(lost)),
            }
        })
        .await
    }

    /// The result of `work`, or the TLS or SASL failure seen while it
    /// runs (or in the last minute, once it has run for a second),
    /// whichever comes first. A failed request is explained by a recent
    /// failure; a successful one clears it.
    pub(crate) async fn race<T>(
        &self,
        work: impl Future<Output = Result<T, Failed>>,
    ) -> Result<T, Failed> {
        let started = Instant::now();
        let mut work = std::pin::pin!(work);
        loop {
            tokio::select! {
                done = &mut work => return match done {
                    Ok(value) => {
                        *self.last.lock().expect("security failure") = None;
                        Ok(value)
                    }
                    Err(Failed::Kafka(error)) => {
                        Err(self.recent().map_or(Failed::Kafka(error), Failed::Security))
                    }
                    Err(other) => Err(other),
                },
                () = tokio::time::sleep(WATCH_POLL) => {
                    // A failure seen before the request began explains it
                    // once it is slow: librdkafka may wait seconds before
                    // trying that broker again.
                    let failure = if started.elapsed() < STILL_FAILING {
                        self.since(started)
                    } else {
                        self.recent()
                    };
                    if let Some(failure) = failure {
                        return Err(Failed::Security(failure));
                    }
                }
            }
        }
    }

    /// The failure seen in the last minute, if any.
    pub(crate) fn recent(&self) -> Option<SecurityError> {
        self.since(Instant::now().checked_sub(RECENT)?)
    }

    fn since(&self, at: Instant) -> Option<SecurityError> {
        let last = self.last.lock().expect("security failure");
        last.as_ref()
            .filter(|(seen, _)| *seen >= at)
            .map(|(_, failure)| failure.clone())
    }

    /// Keeps the failure `reason` describes, if it is one of TLS or SASL.
    fn record(&self, code: Option<Code>, reason: &str) {
        let Some((broker, kind)) = classify(code, reason) else {
            return;
        };
        let detail = detail(reason);
        let again = {
            let mut last = self.last.lock().expect("security failure");
            match last.as_mut() {
                // The same failure again: no second look needed.
                Some((seen, failure)) if kind.matches(failure, &broker) => {
                    *seen = Instant::now();
                    true
                }
                _ => false,
            }
        };
        if again {
            return;
        }
        let failure = match kind {
            Kind::VerifyFailed => match self.probe.certificate_problem(&broker) {
                Some(Problem::Expired(detail)) => SecurityError::Expired { broker, detail },
                Some(Problem::HostName(detail)) => SecurityError::HostName { broker, detail },
                Some(Problem::Untrusted(detail)) => SecurityError::Untrusted { broker, detail },
                None => SecurityError::Untrusted { broker, detail },
            },
            Kind::Failure(make) => make(broker, detail),
        };
        tracing::error!(error = %failure, "kafka connection refused");
        *self.last.lock().expect("security failure") = Some((Instant::now(), failure));
    }
}

/// librdkafka reports a failed connection both as a log line (`FAIL`)
/// and as an error event, each delivered when the client polls its main
/// queue: the producer's polling thread and the consumer's poll loop do,
/// the administration client does not (so [`Topology`](crate::Topology)
/// watches a producer of its own). Both are watched.
impl ClientContext for Watch {
    fn log(&self, level: RDKafkaLogLevel, facility: &str, message: &str) {
        if classify(None, message).is_some() {
            self.record(None, message);
            return;
        }
        match level {
            RDKafkaLogLevel::Emerg
            | RDKafkaLogLevel::Alert
            | RDKafkaLogLevel::Critical
            | RDKafkaLogLevel::Error => tracing::error!(facility, "{message}"),
            RDKafkaLogLevel::Warning => tracing::warn!(facility, "{message}"),
            RDKafkaLogLevel::Notice | RDKafkaLogLevel::Info => {
                tracing::info!(facility, "{message}");
            }
            RDKafkaLogLevel::Debug => tracing::debug!(facility, "{message}"),
        }
    }

    fn error(&self, error: KafkaError, reason: &str) {
        let code = error.rdkafka_error_code();
        if classify(code, reason).is_some() {
            self.record(code, reason);
        } else {
            tracing::error!(%error, reason, "librdkafka error");
        }
    }
}

/// What kind of failure an error callback reports.
enum Kind {
    /// The broker's certificate failed a check; which one takes a look.
    VerifyFailed,
    Failure(fn(String, String) -> SecurityError),
}

impl Kind {
    /// Whether `failure` is of this kind, with `broker`.
    fn matches(&self, failure: &SecurityError, broker: &str) -> bool {
        use SecurityError as E;
        let same_kind = match self {
            Self::VerifyFailed => matches!(
                failure,
                E::Untrusted { .. } | E::Expired { .. } | E::HostName { .. }
            ),
            Self::Failure(make) => {
                std::mem::discriminant(&make(String::new(), String::new()))
                    == std::mem::discriminant(failure)
            }
        };
        same_kind && broker_of(failure) == broker
    }
}

fn broker_of(failure: &SecurityError) -> &str {
    use SecurityError as E;
    match failure {
        E::Untrusted { broker, .. }
        | E::Expired { broker, .. }
        | E::HostName { broker, .. }
        | E::ClientCertificateMissing { broker, .. }
        | E::ClientCertificateRejected { broker, .. }
        | E::Tls { broker, .. }
        | E::SaslMechanism { broker, .. }
        | E::Authentication { broker, .. } => broker,
    }
}

/// The broker (`host:port`) and the kind of a TLS or SASL failure that
/// librdkafka reports as `reason`, with `code` in an error event and
/// without one in a log line; `None` for other failures.
fn classify(code: Option<Code>, reason: &str) -> Option<(String, Kind)> {
    use SecurityError as E;
    let has = |text: &str| reason.contains(text);
    let sasl = has("SASL") && (has("authentication") || has("failed"));
    let kind = if code == Some(Code::Authentication) || sasl {
        if has("mechanism handshake failed") {
            Kind::Failure(|broker, detail| E::SaslMechanism { broker, detail })
        } else {
            Kind::Failure(|broker, detail| E::Authentication { broker, detail })
        }
    } else if has("alert certificate required") {
        Kind::Failure(|broker, detail| E::ClientCertificateMissing { broker, detail })
    } else if [
        "alert bad certificate",
        "alert unknown ca",
        "alert unsupported certificate",
        "alert certificate unknown",
        "alert certificate expired",
        "alert certificate revoked",
        "alert access denied",
    ]
    .iter()
    .any(|alert| has(alert))
    {
        Kind::Failure(|broker, detail| E::ClientCertificateRejected { broker, detail })
    } else if has("certificate verify failed") {
        Kind::VerifyFailed
    } else if code == Some(Code::SSL) || has("SSL handshake failed") {
        Kind::Failure(|broker, detail| E::Tls { broker, detail })
    } else {
        return None;
    };
    Some((broker(reason), kind))
}

/// The `host:port` in `ssl://host:port/1: ...`, librdkafka's broker name.
fn broker(reason: &str) -> String {
    reason
        .split_once("://")
        .and_then(|(_, rest)| rest.split('/').next())
        .unwrap_or("?")
        .to_owned()
}

/// `reason` without the thread and broker names before it and the state
/// after it.
fn detail(reason: &str) -> String {
    let mut text = reason;
    while let Some((name, rest)) = text.split_once(": ") {
        if !name.contains("://") {
            break;
        }
        text = rest;
    }
    let text = text.rsplit_once(" (after ").map_or(text, |(text, _)| text);
    text.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(code: Code, reason: &str) -> Option<SecurityError> {
        classify(Some(code), reason).map(|(broker, kind)| match kind {
            Kind::VerifyFailed => SecurityError::Untrusted {
                broker,
                detail: detail(reason),
            },
            Kind::Failure(make) => make(broker, detail(reason)),
        })
    }

    #[test]
    fn librdkafka_reasons_map_to_their_failure() {
        let missing = "ssl://127.0.0.1:9094/bootstrap: Receive failed: error:0A00045C:SSL \
             routines::tlsv13 alert certificate required: SSL alert number 116 (after 0ms in \
             state APIVERSION_QUERY)";
        assert!(matches!(
            kind(Code::BrokerTransportFailure, missing),
            Some(SecurityError::ClientCertificateMissing { broker, detail })
                if broker == "127.0.0.1:9094" && detail.starts_with("Receive failed")
                    && detail.ends_with("number 116")
        ));
        let login = "sasl_plaintext://127.0.0.1:9096/bootstrap: SASL authentication error: \
             SASL SCRAM authentication failed: broker responded with unknown-user";
        assert!(matches!(
            kind(Code::Authentication, login),
            Some(SecurityError::Authentication { .. })
        ));
        let verify = "ssl://h:1/bootstrap: SSL handshake failed: error:0A000086:SSL \
             routines::certificate verify failed: broker certificate could not be verified";
        assert!(matches!(
            kind(Code::SSL, verify),
            Some(SecurityError::Untrusted { .. })
        ));
        assert!(
            kind(
                Code::BrokerTransportFailure,
                "127.0.0.1:9/bootstrap: Connect refused"
            )
            .is_none()
        );
    }
}
