//! The TLS and SASL endpoints the setup command starts in front of Tansu
//! brokers of their own, with the throwaway CA of its `tls` directory.
//! Each address can be moved with an environment variable.

use std::time::Duration;

use tidings_kafka::{ClientOptions, KafkaTls, SecurityError};
use tidings_testing::names::unique_name;
use tidings_testing::services::{expect_listening, tls_file};

/// TLS with a certificate signed by `ca.pem`: `KAFKA_TLS_BROKERS`, default
/// `127.0.0.1:9093`.
pub fn tls_brokers() -> String {
    env_or("KAFKA_TLS_BROKERS", "127.0.0.1:9093")
}

/// TLS requiring a client certificate signed by `ca.pem`:
/// `KAFKA_CLIENT_CERTIFICATE_BROKERS`, default `127.0.0.1:9094`.
pub fn client_certificate_brokers() -> String {
    env_or("KAFKA_CLIENT_CERTIFICATE_BROKERS", "127.0.0.1:9094")
}

/// TLS with an expired certificate signed by `ca.pem`:
/// `KAFKA_EXPIRED_BROKERS`, default `127.0.0.1:9095`.
pub fn expired_brokers() -> String {
    env_or("KAFKA_EXPIRED_BROKERS", "127.0.0.1:9095")
}

/// SASL (SCRAM) required, no TLS: `KAFKA_SASL_BROKERS`, default
/// `127.0.0.1:9096`.
pub fn sasl_brokers() -> String {
    env_or("KAFKA_SASL_BROKERS", "127.0.0.1:9096")
}

/// TLS with a certificate for the name `localhost` only:
/// `KAFKA_HOST_NAME_BROKERS`, default `127.0.0.1:9097`.
pub fn host_name_brokers() -> String {
    env_or("KAFKA_HOST_NAME_BROKERS", "127.0.0.1:9097")
}

/// Client options for `brokers`, failing the test with the setup command
/// when nothing listens there; quick to give up, as the negative cases
/// wait for it when no failure is reported.
pub fn client(brokers: &str) -> ClientOptions {
    expect_listening("Kafka over TLS or SASL", &format!("kafka://{brokers}"));
    ClientOptions::new(brokers)
        .client_id(unique_name("tidings-tls-test"))
        .request_timeout(Duration::from_secs(10))
}

/// TLS trusting the test CA.
pub fn trusted() -> KafkaTls {
    KafkaTls::default().ca_file(tls_file("ca.pem"))
}

/// TLS trusting the test CA, with its client certificate.
pub fn with_client_certificate() -> KafkaTls {
    trusted().client_certificate(tls_file("client.pem"), tls_file("client.key"))
}

/// The `SecurityError` behind a boxed error, if it is one.
pub fn security_error<'a>(
    error: &'a (dyn std::error::Error + 'static),
) -> Option<&'a SecurityError> {
    let mut next = Some(error);
    while let Some(error) = next {
        if let Some(found) = error.downcast_ref::<SecurityError>() {
            return Some(found);
        }
        next = error.source();
    }
    None
}

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}
