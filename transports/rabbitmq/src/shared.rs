//! One connection for a service's publisher, sources and topology.

use crate::connection::Connector;
use crate::options::{ConnectionOptions, PublisherOptions, SourceOptions};
use crate::{RabbitPublisher, RabbitSource, Topology};

/// One AMQP connection, opened on first use and reopened with backoff,
/// shared by the publishers, sources and topology made from it; each of
/// them works on channels of its own.
///
/// A single connection suits most services. Where publishing may meet the
/// broker's flow control (a memory or disk alarm blocks publishing
/// connections), give consumers a connection of their own, so that a
/// blocked publisher never holds up consuming: make the source with
/// [`RabbitSource::new`] instead.
///
/// ```no_run
/// use tidings_rabbitmq::{
///     ConnectionOptions, PublisherOptions, QueueOptions, RabbitConnection, SourceOptions,
/// };
///
/// # async fn run() -> Result<(), tidings_rabbitmq::TopologyError> {
/// let rabbit = RabbitConnection::new(ConnectionOptions::new("amqp://guest:guest@127.0.0.1:5672/%2f"));
/// rabbit.topology().declare_queue("orders", QueueOptions::quorum()).await?;
/// let publisher = rabbit.publisher(PublisherOptions::default());
/// let source = rabbit.source(SourceOptions::default());
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct RabbitConnection {
    connector: Connector,
}

impl std::fmt::Debug for RabbitConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RabbitConnection")
            .field("connection", self.connector.options())
            .finish()
    }
}

impl RabbitConnection {
    /// A connection with `options`, opened on first use.
    pub fn new(options: ConnectionOptions) -> Self {
        Self {
            connector: Connector::new(options),
        }
    }

    /// A publisher on this connection.
    pub fn publisher(&self, options: PublisherOptions) -> RabbitPublisher {
        RabbitPublisher::on(self.connector.clone(), options)
    }

    /// A source on this connection.
    pub fn source(&self, options: SourceOptions) -> RabbitSource {
        RabbitSource::on(self.connector.clone(), options)
    }

    /// Topology management on this connection.
    pub fn topology(&self) -> Topology {
        Topology::on(self.connector.clone())
    }
}
