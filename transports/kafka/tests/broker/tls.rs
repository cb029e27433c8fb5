//! Kafka over TLS: PostgreSQL outbox → relay → Kafka over TLS → consumer
//! with the inbox, with the test CA and with a client certificate; and the
//! failures a misconfigured client meets (a wrong CA, an expired broker
//! certificate, a certificate for another host, a missing or refused
//! client certificate, a refused SASL login), each failing at once with a
//! typed error whose message names the setting to fix.
//!
//! The brokers are Tansu instances behind stunnel, started by the setup
//! command (see the crate README for the ports).

use crate::support;

use std::time::{Duration, Instant};

use support::e2e::{ConsumerRun, World, leak};
use support::secure::{self, security_error};
use tidings_core::{Envelope, PublishError, PublisherExt, Source, SourceError};
use tidings_kafka::{
    ClientOptions, ConnectError, KafkaPublisher, KafkaSasl, KafkaSource, KafkaTls,
    PublisherOptions, SaslMechanism, SecurityError, TopicOptions, Topology,
};
use tidings_testing::names::unique_name;
use tidings_testing::services::tls_file;
use tokio_util::sync::CancellationToken;

const ORDERS: u32 = 200;
const KEYS: u32 = 8;
/// A failure must be reported well before the request timeout (10 s).
const FAST: Duration = Duration::from_secs(5);

/// Relays `ORDERS` events to a fresh topic on the brokers of `client` and
/// consumes them: each must have exactly one effect.
async fn relay_and_consume(client: ClientOptions) {
    let topic = leak(unique_name("secure"));
    let topology = Topology::new(&client).unwrap();
    topology.connect().await.expect("connect");
    topology
        .create(topic, &TopicOptions::default().partitions(2))
        .await
        .expect("create topic");
    let publisher = KafkaPublisher::new(&client, PublisherOptions::default()).unwrap();
    publisher.connect().await.expect("publisher connect");
    let world = World::on(client, topic).await;
    world.stage_and_relay(ORDERS, KEYS).await;
    let cancel = CancellationToken::new();
    let run = world.consumer(&unique_name("billing"), "a", Duration::ZERO);
    let consumer = tokio::spawn(run.run_to(cancel.clone()));
    let deadline = Instant::now() + Duration::from_secs(60);
    while world.effects().await.0 < i64::from(ORDERS) {
        assert!(
            Instant::now() < deadline,
            "consumed only {:?}",
            world.effects().await
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    cancel.cancel();
    consumer.await.unwrap();
    assert_eq!(
        world.effects().await,
        (i64::from(ORDERS), 1),
        "(events with an effect, most effects of one event)"
    );
    world.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_the_private_ca_relays_and_consumes() {
    let client = secure::client(&secure::tls_brokers()).tls(secure::trusted());
    relay_and_consume(client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_a_client_certificate_relays_and_consumes() {
    let client = secure::client(&secure::client_certificate_brokers())
        .tls(secure::with_client_certificate());
    relay_and_consume(client).await;
}

/// Checks that the topology client, the publisher and the source of
/// `client` each fail fast with a `SecurityError` that `expected` accepts
/// and whose message names `setting`; returns that error.
async fn refused(
    client: ClientOptions,
    expected: fn(&SecurityError) -> bool,
    setting: &str,
) -> SecurityError {
    let check = |error: &SecurityError, what: &str| {
        assert!(expected(error), "{what}: unexpected {error:?}");
        assert!(
            error.to_string().contains(setting),
            "{what}: {error} does not name {setting}"
        );
    };
    let started = Instant::now();
    let topology = Topology::new(&client).unwrap();
    let failure = match topology.connect().await {
        Err(ConnectError::Security(failure)) => failure,
        other => panic!("topology connect: {other:?}"),
    };
    check(&failure, "topology connect");
    assert!(started.elapsed() < FAST, "slow: {:?}", started.elapsed());

    let publisher = KafkaPublisher::new(&client, PublisherOptions::default()).unwrap();
    match publisher.connect().await {
        Err(ConnectError::Security(failure)) => check(&failure, "publisher connect"),
        other => panic!("publisher connect: {other:?}"),
    }
    let envelope = Envelope::new(
        "secure",
        "secure-orders",
        "order.placed",
        bytes::Bytes::from_static(b"{}"),
        "application/json",
    );
    let started = Instant::now();
    match publisher.publish(&envelope).await {
        Err(error @ PublishError::Unavailable(_)) => {
            let failure = security_error(&error).expect("a security error as the source");
            check(failure, "publish");
        }
        other => panic!("publish: {other:?}"),
    }
    assert!(started.elapsed() < FAST, "slow: {:?}", started.elapsed());

    let source = KafkaSource::new(&client, support::group("secure")).unwrap();
    match source.connect().await {
        Err(ConnectError::Security(failure)) => check(&failure, "source connect"),
        other => panic!("source connect: {other:?}"),
    }
    match source.subscribe("secure-orders").await {
        Err(error @ SourceError::Unavailable(_)) => {
            let failure = security_error(&error).expect("a security error as the source");
            check(failure, "subscribe");
        }
        Err(other) => panic!("subscribe: {other:?}"),
        Ok(_) => panic!("subscribed through a refused connection"),
    }
    failure
}

#[tokio::test]
async fn a_wrong_ca_names_the_ca_setting() {
    let tls = KafkaTls::default().ca_file(tls_file("other-ca.pem"));
    let client = secure::client(&secure::tls_brokers()).tls(tls);
    let failure = refused(
        client,
        |e| matches!(e, SecurityError::Untrusted { .. }),
        "ssl.ca.location",
    )
    .await;
    assert!(
        failure.to_string().contains("KafkaTls::ca_file"),
        "{failure}"
    );
}

#[tokio::test]
async fn an_expired_broker_certificate_says_so() {
    let client = secure::client(&secure::expired_brokers()).tls(secure::trusted());
    let failure = refused(
        client,
        |e| matches!(e, SecurityError::Expired { .. }),
        "renew it on the broker",
    )
    .await;
    assert!(failure.to_string().contains("expired"), "{failure}");
}

#[tokio::test]
async fn a_certificate_for_another_host_names_the_host_name_setting() {
    let client = secure::client(&secure::host_name_brokers()).tls(secure::trusted());
    refused(
        client,
        |e| matches!(e, SecurityError::HostName { .. }),
        "KafkaTls::verify_hostname",
    )
    .await;
}

#[tokio::test]
async fn a_missing_client_certificate_names_the_certificate_setting() {
    let client = secure::client(&secure::client_certificate_brokers()).tls(secure::trusted());
    refused(
        client,
        |e| matches!(e, SecurityError::ClientCertificateMissing { .. }),
        "ssl.certificate.location",
    )
    .await;
}

#[tokio::test]
async fn a_refused_client_certificate_names_the_certificate_setting() {
    // A certificate for servers only: the broker refuses it as a client's.
    let tls = secure::trusted()
        .client_certificate(tls_file("kafka-server.pem"), tls_file("kafka-server.key"));
    let client = secure::client(&secure::client_certificate_brokers()).tls(tls);
    refused(
        client,
        |e| matches!(e, SecurityError::ClientCertificateRejected { .. }),
        "ssl.certificate.location",
    )
    .await;
}

#[tokio::test]
async fn a_refused_sasl_login_names_the_password_setting() {
    let sasl = KafkaSasl::new(SaslMechanism::ScramSha512, "relay", "wrong-password");
    let client = secure::client(&secure::sasl_brokers()).sasl(sasl);
    assert!(!format!("{client:?}").contains("wrong-password"));
    refused(
        client,
        |e| matches!(e, SecurityError::Authentication { .. }),
        "sasl.password",
    )
    .await;
}
