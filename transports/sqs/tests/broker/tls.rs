//! SQS over HTTPS with a private CA, through the TLS front the setup
//! command starts for the SQS stand-in: the client's own trust store is
//! all tidings needs, and a certificate from an unknown CA fails at once,
//! as a transient failure that loses no message.

use crate::support;

use std::time::{Duration, Instant};

use aws_smithy_http_client::tls::{self, TlsContext, TrustStore, rustls_provider::CryptoMode};
use bytes::Bytes;
use futures::StreamExt;
use tidings_core::{Envelope, PublishError, PublisherExt, Source};
use tidings_sqs::aws_sdk_sqs::Client;
use tidings_sqs::aws_sdk_sqs::config::{BehaviorVersion, Credentials, Region};
use tidings_sqs::{PublisherOptions, QueueOptions, SqsPublisher, SqsSource};
use tidings_testing::services::{expect_listening, sqs_https_endpoint, tls_file};

/// A client for the stand-in behind its TLS front, trusting only the CA in
/// the PEM file `ca`.
fn https_client(ca: &str) -> Client {
    let pem = std::fs::read(tls_file(ca)).expect("read CA certificate");
    let http = aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(CryptoMode::Ring))
        .tls_context(
            TlsContext::builder()
                .with_trust_store(TrustStore::empty().with_pem_certificate(pem))
                .build()
                .expect("TLS context"),
        )
        .build_https();
    let config = tidings_sqs::aws_sdk_sqs::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .endpoint_url(sqs_https_endpoint())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "tls-test"))
        .http_client(http)
        .build();
    Client::from_conf(config)
}

fn envelope(queue: &str) -> Envelope {
    Envelope::new(
        "tls-events",
        queue,
        "test.happened",
        Bytes::from_static(b"{\"n\":1}"),
        "application/json",
    )
}

#[tokio::test]
async fn publishes_and_consumes_over_https_with_a_private_ca() {
    let client = https_client("ca.pem");
    support::answers(&client, &sqs_https_endpoint()).await;
    let queue = support::queue_name("tls", false);
    support::declare(&client, &queue, QueueOptions::default()).await;
    let publisher = SqsPublisher::new(client.clone(), PublisherOptions::default());
    let sent = envelope(&queue);

    publisher.publish(&sent).await.expect("publish over HTTPS");

    let source = SqsSource::new(client, support::source_options());
    let mut stream = source.subscribe(&queue).await.expect("subscribe");
    let delivery = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if let Ok(delivery) = stream.next().await.expect("stream ended") {
                return delivery;
            }
        }
    })
    .await
    .expect("no delivery in time");
    assert_eq!(delivery.envelope().event_id, sent.event_id);
    assert_eq!(delivery.envelope().payload, sent.payload);
    delivery.ack().await.expect("ack over HTTPS");
}

#[tokio::test]
async fn a_certificate_from_an_unknown_ca_is_refused_at_once() {
    expect_listening("the SQS stand-in's TLS front", &sqs_https_endpoint());
    let publisher = SqsPublisher::new(https_client("other-ca.pem"), PublisherOptions::default());
    let started = Instant::now();
    let error = publisher
        .publish(&envelope("tls_refused"))
        .await
        .expect_err("the certificate must be refused");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "took {:?}",
        started.elapsed()
    );
    let chain = tidings_core::port::error_chain(&error);
    assert!(
        matches!(error, PublishError::Unavailable(_)) && error.is_transient(),
        "{chain}"
    );
    assert!(
        chain.contains("invalid peer certificate") && chain.contains("UnknownIssuer"),
        "{chain}"
    );
}
