//! The store over TLS, through the TLS front the setup command starts for
//! the MongoDB stand-in: the driver's TLS options on the client are all the
//! store needs, and a certificate from an unknown CA is refused with an
//! error that says so.

use crate::support;

use std::time::{Duration, Instant};

use mongodb::Client;
use mongodb::bson::doc;
use mongodb::options::{ClientOptions, Tls, TlsOptions};
use support::{DATABASE, ORDER_EVENTS};
use tidings_core::{ClaimRequest, ClaimedBatch, OutboxStore};
use tidings_mongo::Retention;
use tidings_testing::services::{expect_listening, mongodb_tls_url, service_missing, tls_file};

/// The client options of the TLS URL, trusting the CA in the PEM file `ca`.
async fn options(ca: &str) -> ClientOptions {
    let url = mongodb_tls_url();
    let mut options = ClientOptions::parse(&url)
        .await
        .unwrap_or_else(|e| service_missing("MongoDB over TLS", &url, &e));
    options.tls = Some(Tls::Enabled(
        TlsOptions::builder().ca_file_path(tls_file(ca)).build(),
    ));
    options.server_selection_timeout = Some(Duration::from_secs(10));
    options
}

#[tokio::test]
async fn a_store_stages_and_claims_over_tls() {
    support::init_tracing();
    let client = Client::with_options(options("ca.pem").await).unwrap();
    if let Err(e) = client
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await
    {
        service_missing("MongoDB over TLS", &mongodb_tls_url(), &e);
    }
    let store = support::store_in(client.database(DATABASE), Retention::Delete).await;
    let mut ctx = store.begin().await.expect("begin over TLS");
    ctx.outbox()
        .stage(&ORDER_EVENTS, "order.placed", &1_u64)
        .unwrap();
    ctx.commit().await.expect("commit over TLS");

    let batch = store
        .claim(ClaimRequest {
            route: ORDER_EVENTS.route(),
            limit: 10,
            lease: Duration::from_secs(60),
            after: None,
        })
        .await
        .expect("claim over TLS");
    assert_eq!(batch.records().len(), 1);
    support::drop_collections(&store).await;
}

#[tokio::test]
async fn a_certificate_from_an_unknown_ca_is_refused() {
    expect_listening("the MongoDB stand-in's TLS front", &mongodb_tls_url());
    let mut options = options("other-ca.pem").await;
    // The driver waits this long for a server it can use before it
    // reports why none would do.
    options.server_selection_timeout = Some(Duration::from_secs(1));
    let client = Client::with_options(options).unwrap();
    let started = Instant::now();
    let error = client
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await
        .expect_err("the certificate must be refused");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    let text = error.to_string();
    assert!(
        text.contains("invalid peer certificate") && text.contains("UnknownIssuer"),
        "{text}"
    );
}
