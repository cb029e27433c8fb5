//! Clients, queues and the broker harness the integration tests share.

#![allow(dead_code, unreachable_pub)]

mod foreign;
pub mod moto;
pub mod orders;

use std::time::Duration;

use tidings_core::{Backoff, Envelope, PublisherExt};
use tidings_sqs::aws_sdk_sqs::Client;
use tidings_sqs::{
    PublisherOptions, QueueOptions, SourceOptions, SqsPublisher, SqsSource, Topology,
    dead_letter_queue, local_client,
};
use tidings_testing::broker::{BrokerFixture, BrokerHarness};
use tidings_testing::names::unique_name;
use tidings_testing::services::{service_missing, sqs_endpoint};

/// The visibility timeout of test queues: short, so a lost message comes
/// back soon.
pub const VISIBILITY: Duration = Duration::from_secs(3);

/// A client for the shared SQS stand-in; fails the test when it does not
/// answer.
pub async fn client() -> Client {
    let endpoint = sqs_endpoint();
    let client = local_client(&endpoint);
    answers(&client, &endpoint).await;
    client
}

/// Fails the test with the setup command unless SQS at `endpoint` answers.
pub async fn answers(client: &Client, endpoint: &str) {
    let probe = client.list_queues().max_results(1).send();
    match tokio::time::timeout(Duration::from_secs(10), probe).await {
        Ok(Ok(_)) => {}
        Ok(Err(error)) => service_missing(
            "SQS",
            endpoint,
            &tidings_sqs::aws_sdk_sqs::error::DisplayErrorContext(error),
        ),
        Err(_) => service_missing("SQS", endpoint, &"no answer within 10 s"),
    }
}

/// A unique queue name; FIFO ones end in `.fifo`.
pub fn queue_name(prefix: &str, fifo: bool) -> String {
    let name = unique_name(prefix);
    if fifo { format!("{name}.fifo") } else { name }
}

/// Creates a queue (and its dead-letter queue) with the test settings.
pub async fn declare(client: &Client, queue: &str, options: QueueOptions) {
    Topology::new(client.clone())
        .declare_queue(queue, options.retention(Duration::from_secs(600)))
        .await
        .unwrap_or_else(|e| panic!("declare {queue}: {}", tidings_core::port::error_chain(&e)));
}

/// A client, a new standard queue declared with `options` and a publisher
/// to it with default options: how most tests start.
pub async fn standard_queue(prefix: &str, options: QueueOptions) -> (Client, String, SqsPublisher) {
    let client = client().await;
    let queue = queue_name(prefix, false);
    declare(&client, &queue, options).await;
    let publisher = SqsPublisher::new(client.clone(), PublisherOptions::default());
    (client, queue, publisher)
}

/// Publishes `batch` in one call; fails the test if any event is refused.
pub async fn publish_all(publisher: &SqsPublisher, batch: &[Envelope]) {
    let results = publisher.publish_batch(batch).await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
}

/// The URL of `queue`.
pub async fn queue_url(client: &Client, queue: &str) -> String {
    client
        .get_queue_url()
        .queue_name(queue)
        .send()
        .await
        .expect("queue url")
        .queue_url
        .expect("url")
}

/// Source settings for tests: short long polls and retries.
pub fn source_options() -> SourceOptions {
    SourceOptions::default()
        .wait_time(Duration::from_secs(2))
        .retry_backoff(Backoff::new(
            Duration::from_millis(100),
            Duration::from_secs(1),
        ))
}

/// The broker conformance harness, on standard or FIFO queues.
pub struct Sqs {
    pub fifo: bool,
}

impl BrokerHarness for Sqs {
    type Publisher = SqsPublisher;
    type Source = SqsSource;

    async fn fixture(&self) -> BrokerFixture<SqsPublisher, SqsSource> {
        let client = client().await;
        let queue = queue_name("conformance", self.fifo);
        let options = QueueOptions::default()
            .max_receive_count(100)
            .visibility_timeout(VISIBILITY);
        declare(&client, &queue, options).await;
        BrokerFixture {
            publisher: SqsPublisher::new(client.clone(), PublisherOptions::default()),
            source: SqsSource::new(client, source_options()),
            dead_letter_queue: dead_letter_queue(&queue),
            queue,
        }
    }
}
