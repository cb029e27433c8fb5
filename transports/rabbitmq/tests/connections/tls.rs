//! `amqps://` against the real broker behind the TLS front the setup
//! command starts: round trips with a private CA and with a client
//! certificate, and every wrong certificate, host name or scheme failing at
//! once with an error that says so, as a transient failure that loses no
//! message.

use crate::support;

use std::time::{Duration, Instant};

use support::{EXPIRES, envelope, next};
use tidings_core::{PublishError, PublisherExt, Source};
use tidings_rabbitmq::{
    ConnectionOptions, Pem, PublisherOptions, QueueKind, QueueOptions, RabbitPublisher,
    RabbitSource, SourceOptions, TlsError, TlsOptions, Topology, TopologyError,
};
use tidings_testing::names::unique_name;
use tidings_testing::services::{
    amqps_client_certificate_url, amqps_url, expect_listening, service_missing, tls_file,
};

/// A refusal must come this fast: no waiting out a timeout.
const AT_ONCE: Duration = Duration::from_secs(3);

/// Trusts the throwaway CA the TLS front's certificate is signed by.
fn trusting_the_test_ca() -> TlsOptions {
    TlsOptions::default().ca_certificates(Pem::file(tls_file("ca.pem")))
}

fn connection(url: &str, tls: TlsOptions) -> ConnectionOptions {
    ConnectionOptions::new(url)
        .connection_name(unique_name("tidings-test-tls"))
        .tls(tls)
}

/// `url` with its host `localhost` replaced by `127.0.0.1`, an address the
/// test certificate is not valid for.
fn by_address(url: &str) -> String {
    assert!(url.contains("@localhost:"), "{url} must name localhost");
    url.replacen("@localhost:", "@127.0.0.1:", 1)
}

/// A queue declared over TLS, and a publisher and source connected the
/// same way.
async fn round_trip(url: &str, tls: TlsOptions) {
    let queue = unique_name("tls");
    let topology = Topology::new(connection(url, tls.clone()));
    match topology
        .declare_queue(
            &queue,
            QueueOptions::from(QueueKind::Classic).expires(EXPIRES),
        )
        .await
    {
        Ok(()) => {}
        Err(TopologyError::Connect(e)) => service_missing("RabbitMQ over TLS", url, &e),
        Err(e) => panic!("declare over TLS: {e:?}"),
    }
    let publisher = RabbitPublisher::new(connection(url, tls.clone()), PublisherOptions::default());
    let source = RabbitSource::new(connection(url, tls), SourceOptions::default());
    let sent = envelope(&queue, 1);

    let results = publisher.publish_batch(std::slice::from_ref(&sent)).await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");

    let mut stream = source.subscribe(&queue).await.expect("subscribe over TLS");
    let delivery = next(&mut stream).await;
    assert_eq!(delivery.envelope().event_id, sent.event_id);
    assert_eq!(delivery.envelope().payload, sent.payload);
    delivery.ack().await.expect("ack over TLS");
    drop(stream);
    topology
        .delete_queue(&queue)
        .await
        .expect("delete over TLS");
}

/// Publishes one message to `url` and returns its error, checking that it
/// came at once and is transient (the relay keeps the message and tries
/// again), and the TLS error under it.
async fn refused(url: &str, tls: TlsOptions) -> (PublishError, String) {
    expect_listening("RabbitMQ or its TLS front", url);
    let publisher = RabbitPublisher::new(connection(url, tls), PublisherOptions::default());
    let started = Instant::now();
    let mut results = publisher.publish_batch(&[envelope("tls_refused", 1)]).await;
    let error = results.pop().expect("one result").expect_err("must fail");
    assert!(started.elapsed() < AT_ONCE, "took {:?}", started.elapsed());
    assert!(
        matches!(error, PublishError::Unavailable(_)) && error.is_transient(),
        "{error:?}"
    );
    let tls = TlsError::find(&error)
        .unwrap_or_else(|| panic!("no TLS error under {error:?}"))
        .to_string();
    (error, tls)
}

#[tokio::test]
async fn publishes_and_consumes_over_tls_with_a_private_ca() {
    round_trip(&amqps_url(), trusting_the_test_ca()).await;
}

#[tokio::test]
async fn publishes_and_consumes_with_a_client_certificate() {
    let tls = trusting_the_test_ca().client_certificate(
        Pem::file(tls_file("client.pem")),
        Pem::file(tls_file("client.key")),
    );
    round_trip(&amqps_client_certificate_url(), tls).await;
}

#[tokio::test]
async fn certificates_given_as_text_work_like_files() {
    let read = |name| std::fs::read(tls_file(name)).expect("read certificate");
    let tls = TlsOptions::default()
        .ca_certificates(Pem::new(read("ca.pem")))
        .client_certificate(Pem::new(read("client.pem")), Pem::new(read("client.key")));
    round_trip(&amqps_client_certificate_url(), tls).await;
}

#[tokio::test]
async fn a_certificate_from_an_unknown_ca_is_refused_at_once() {
    let other = TlsOptions::default().ca_certificates(Pem::file(tls_file("other-ca.pem")));
    for tls in [other, TlsOptions::default()] {
        let (error, tls) = refused(&amqps_url(), tls).await;
        assert!(
            tls.contains("certificate of localhost:5671 was refused")
                && tls.contains("UnknownIssuer"),
            "{tls} under {error:?}"
        );
    }
}

#[tokio::test]
async fn a_certificate_for_another_host_name_is_refused_at_once() {
    let (error, tls) = refused(&by_address(&amqps_url()), trusting_the_test_ca()).await;
    assert!(
        tls.contains("was refused") && tls.contains("not valid for name"),
        "{tls} under {error:?}"
    );
}

#[tokio::test]
async fn a_broker_wanting_a_client_certificate_refuses_a_connection_without_one() {
    let (error, tls) = refused(&amqps_client_certificate_url(), trusting_the_test_ca()).await;
    assert!(
        tls.contains("refused the TLS handshake") && tls.contains("CertificateRequired"),
        "{tls} under {error:?}"
    );
}

#[tokio::test]
async fn plain_amqp_to_the_tls_port_fails_at_once_and_says_so() {
    let plain = amqps_url().replacen("amqps://", "amqp://", 1);
    let (error, tls) = refused(&plain, TlsOptions::default()).await;
    assert!(tls.contains("use amqps://"), "{tls} under {error:?}");
}

#[tokio::test]
async fn amqps_to_a_plain_port_fails_at_once_and_says_so() {
    let plain_port = support::connection("plain").get_url().to_owned();
    let tls_to_plain =
        plain_port
            .replacen("amqp://", "amqps://", 1)
            .replacen("@127.0.0.1:", "@localhost:", 1);
    let (error, tls) = refused(&tls_to_plain, trusting_the_test_ca()).await;
    assert!(tls.contains("does not speak TLS"), "{tls} under {error:?}");
}

#[tokio::test]
async fn tls_options_with_a_plain_url_are_refused_before_connecting() {
    let plain = support::connection("plain").get_url().to_owned();
    let (error, tls) = refused(&plain, trusting_the_test_ca()).await;
    assert!(tls.contains("use amqps://"), "{tls} under {error:?}");
}

#[tokio::test]
async fn an_unreadable_certificate_file_is_named() {
    let missing = tls_file("ca.pem").with_file_name("no-such-ca.pem");
    let tls = TlsOptions::default().ca_certificates(Pem::file(&missing));
    let (error, tls) = refused(&amqps_url(), tls).await;
    assert!(
        tls.contains(&missing.display().to_string()),
        "{tls} under {error:?}"
    );
}

#[tokio::test]
async fn a_source_and_topology_report_a_refused_certificate_too() {
    expect_listening("RabbitMQ's TLS front", &amqps_url());
    let other = TlsOptions::default().ca_certificates(Pem::file(tls_file("other-ca.pem")));
    let topology = Topology::new(connection(&amqps_url(), other.clone()));
    let error = topology
        .declare_queue(&unique_name("tls_refused"), QueueOptions::default())
        .await
        .expect_err("refused");
    assert!(matches!(error, TopologyError::Connect(_)), "{error:?}");
    assert!(
        matches!(
            TlsError::find(&error),
            Some(TlsError::CertificateRefused { .. })
        ),
        "{error:?}"
    );

    let source = RabbitSource::new(connection(&amqps_url(), other), SourceOptions::default());
    let started = Instant::now();
    let error = match source.subscribe("tls_refused").await {
        Ok(_) => panic!("subscribed with a refused certificate"),
        Err(error) => error,
    };
    assert!(started.elapsed() < AT_ONCE, "took {:?}", started.elapsed());
    assert!(
        matches!(
            TlsError::find(&error),
            Some(TlsError::CertificateRefused { .. })
        ),
        "{error:?}"
    );
}
