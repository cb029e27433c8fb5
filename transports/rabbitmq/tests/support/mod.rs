//! Shared set-up of the integration tests: unique queues on the local
//! RabbitMQ, deleted afterwards, and clients with unique connection names.

#![allow(dead_code, unreachable_pub)]

mod foreign;

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use lapin::options::BasicGetOptions;
use lapin::{BasicProperties, Connection, ConnectionProperties};
use tidings_core::{Delivery, Envelope, Source};
use tidings_rabbitmq::{
    ConnectionOptions, PublisherOptions, QueueKind, QueueOptions, RabbitAcker, RabbitPublisher,
    RabbitSource, RabbitStream, SourceOptions, Topology, TopologyError, dead_letter_queue,
};
use tidings_testing::broker::{BrokerFixture, BrokerHarness};
use tidings_testing::names::unique_name;
use tidings_testing::services::{amqp_url, service_missing};

/// How long a test waits for a delivery before failing.
pub const WAIT: Duration = Duration::from_secs(20);
/// Queues no test deletes (the conformance fixtures have no teardown) or
/// that a failed test left behind delete themselves after going unused this
/// long; every test finishes well within it.
pub const EXPIRES: Duration = Duration::from_secs(60);

/// Connection options with a name no other test uses.
pub fn connection(role: &str) -> ConnectionOptions {
    named(&unique_name(&format!("tidings-test-{role}")))
}

/// Connection options with the connection name `name`, for a test that
/// closes the connection by its name; reconnects quickly.
pub fn named(name: &str) -> ConnectionOptions {
    ConnectionOptions::new(amqp_url())
        .connection_name(name)
        .reconnect_backoff(tidings_core::Backoff::new(
            Duration::from_millis(50),
            Duration::from_millis(500),
        ))
}

/// Fails the test with the setup command when the broker is missing.
pub fn expect_broker<T>(result: Result<T, TopologyError>) -> T {
    match result {
        Ok(value) => value,
        Err(TopologyError::Connect(e)) => service_missing("RabbitMQ", &amqp_url(), &e),
        Err(e) => panic!("topology: {e:?}"),
    }
}

/// A declared queue with its clients; [`Setup::delete`] removes it.
pub struct Setup {
    pub queue: String,
    pub topology: Topology,
    pub publisher: RabbitPublisher,
    pub source: RabbitSource,
}

impl Setup {
    pub async fn new(prefix: &str, kind: QueueKind) -> Self {
        Self::with(
            prefix,
            kind,
            PublisherOptions::default(),
            connection("source"),
        )
        .await
    }

    /// A classic queue, published to with `options`.
    pub async fn classic(prefix: &str, options: PublisherOptions) -> Self {
        Self::with(prefix, QueueKind::Classic, options, connection("source")).await
    }

    pub async fn with(
        prefix: &str,
        kind: QueueKind,
        publisher: PublisherOptions,
        source: ConnectionOptions,
    ) -> Self {
        let queue = unique_name(prefix);
        let topology = Topology::new(connection("topology"));
        let options = QueueOptions::from(kind).expires(EXPIRES);
        expect_broker(topology.declare_queue(&queue, options).await);
        Self {
            queue,
            topology,
            publisher: RabbitPublisher::new(connection("publisher"), publisher),
            source: RabbitSource::new(source, SourceOptions::default()),
        }
    }

    pub fn envelope(&self, n: u32) -> Envelope {
        envelope(&self.queue, n)
    }

    pub async fn subscribe(&self, queue: &str) -> RabbitStream {
        self.source.subscribe(queue).await.expect("subscribe")
    }

    pub async fn delete(self) {
        expect_broker(self.topology.delete_queue(&self.queue).await);
    }
}

/// An envelope for `destination` whose payload says `n`.
pub fn envelope(destination: &str, n: u32) -> Envelope {
    let mut env = Envelope::new(
        "test-events",
        destination,
        "test.happened",
        Bytes::from(format!("{{\"n\":{n}}}")),
        "application/json",
    );
    env.ordering_key = Some(format!("key-{n}"));
    env
}

/// The next delivery, skipping errors a reconnect yields.
pub async fn next(stream: &mut RabbitStream) -> Delivery<RabbitAcker> {
    tokio::time::timeout(WAIT, async {
        loop {
            match stream.next().await.expect("stream ended") {
                Ok(delivery) => return delivery,
                Err(e) => tracing::info!(error = %e, "stream error, expected across reconnects"),
            }
        }
    })
    .await
    .expect("no delivery in time")
}

/// A connection of a plain AMQP client, bypassing the transport, and a
/// channel on it; fails the test with the setup command when the broker is
/// missing.
pub async fn plain_channel() -> (Connection, lapin::Channel) {
    let conn = Connection::connect(&amqp_url(), ConnectionProperties::default())
        .await
        .unwrap_or_else(|e| service_missing("RabbitMQ", &amqp_url(), &e));
    let ch = conn.create_channel().await.expect("channel");
    (conn, ch)
}

/// Fetches one message from `queue` with a plain AMQP client, bypassing
/// the source, and acks it.
pub async fn raw_get(queue: &str) -> Option<(BasicProperties, Vec<u8>)> {
    let (conn, ch) = plain_channel().await;
    let got = ch
        .basic_get(queue.into(), BasicGetOptions { no_ack: true })
        .await
        .expect("basic.get");
    let _ = conn.close(200, "OK".into()).await;
    got.map(|m| (m.delivery.properties, m.delivery.data))
}

/// Declares an internal exchange, to which clients may not publish.
pub async fn declare_internal_exchange(name: &str) {
    let (conn, ch) = plain_channel().await;
    let options = lapin::options::ExchangeDeclareOptions {
        internal: true,
        ..Default::default()
    };
    ch.exchange_declare(
        name.into(),
        lapin::ExchangeKind::Direct,
        options,
        Default::default(),
    )
    .await
    .expect("declare an internal exchange");
    let _ = conn.close(200, "OK".into()).await;
}

/// Deletes an exchange a test declared.
pub async fn delete_exchange(name: &str) {
    let (conn, ch) = plain_channel().await;
    ch.exchange_delete(name.into(), Default::default())
        .await
        .expect("delete the exchange");
    let _ = conn.close(200, "OK".into()).await;
}

/// The conformance harness: a fresh queue of `kind` per fixture.
pub struct Rabbit {
    pub kind: QueueKind,
    /// Queues made for the case, deleted by its teardown.
    pub queues: std::sync::Mutex<Vec<String>>,
}

impl Rabbit {
    pub fn new(kind: QueueKind) -> Self {
        Self {
            kind,
            queues: std::sync::Mutex::default(),
        }
    }
}

impl BrokerHarness for Rabbit {
    type Publisher = RabbitPublisher;
    type Source = RabbitSource;

    async fn fixture(&self) -> BrokerFixture<RabbitPublisher, RabbitSource> {
        let queue = unique_name("conformance");
        let topology = Topology::new(connection("topology"));
        let options = QueueOptions::from(self.kind).expires(EXPIRES);
        expect_broker(topology.declare_queue(&queue, options).await);
        self.queues.lock().unwrap().push(queue.clone());
        BrokerFixture {
            publisher: RabbitPublisher::new(connection("publisher"), PublisherOptions::default()),
            source: RabbitSource::new(connection("source"), SourceOptions::default()),
            dead_letter_queue: dead_letter_queue(&queue),
            queue,
        }
    }

    fn exact_delivery_counts(&self) -> bool {
        self.kind == QueueKind::Quorum
    }

    async fn teardown(&self) {
        let queues = std::mem::take(&mut *self.queues.lock().unwrap());
        let topology = Topology::new(connection("teardown"));
        for queue in queues {
            expect_broker(topology.delete_queue(&queue).await);
        }
    }
}
