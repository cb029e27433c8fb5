//! Settings of the connection, the publisher and the source.

use std::collections::HashMap;
use std::time::Duration;

use tidings_core::{Backoff, destination_settings, settings};

use crate::tls::TlsOptions;

/// Settings of one connection to RabbitMQ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionOptions {
    pub(crate) url: String,
    pub(crate) connection_name: String,
    pub(crate) reconnect_backoff: Backoff,
    pub(crate) connect_timeout: Duration,
    pub(crate) tls: TlsOptions,
}

impl ConnectionOptions {
    /// Default [`connection_name`](Self::connection_name).
    pub const DEFAULT_CONNECTION_NAME: &'static str = "tidings";
    /// Default [`reconnect_backoff`](Self::reconnect_backoff): from 100 ms,
    /// doubling, capped at 10 s.
    pub const DEFAULT_RECONNECT_BACKOFF: Backoff =
        Backoff::new(Duration::from_millis(100), Duration::from_secs(10));

    /// Default [`connect_timeout`](Self::connect_timeout): 10 s.
    pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

    /// Options for the broker at `url`, for example
    /// `amqp://guest:guest@127.0.0.1:5672/%2f`, or
    /// `amqps://user:password@broker.example.com:5671/%2f` for TLS.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            connection_name: Self::DEFAULT_CONNECTION_NAME.to_owned(),
            reconnect_backoff: Self::DEFAULT_RECONNECT_BACKOFF,
            connect_timeout: Self::DEFAULT_CONNECT_TIMEOUT,
            tls: TlsOptions::default(),
        }
    }

    /// The broker URL, given to [`new`](Self::new).
    pub fn get_url(&self) -> &str {
        &self.url
    }
}

settings!(ConnectionOptions {
    /// The name the connection shows in `rabbitmqctl list_connections` and
    /// the management UI (the `connection_name` client property); default
    /// [`DEFAULT_CONNECTION_NAME`](Self::DEFAULT_CONNECTION_NAME).
    connection_name(name: impl Into<String>) = name.into(), get_connection_name: &str;
    /// The delay schedule between reconnect attempts after the connection
    /// drops; default [`DEFAULT_RECONNECT_BACKOFF`](Self::DEFAULT_RECONNECT_BACKOFF).
    reconnect_backoff(backoff: Backoff), get_reconnect_backoff: Backoff;
    /// How long opening a connection (TCP, TLS and the AMQP handshake) may
    /// take before the attempt counts as failed; default
    /// [`DEFAULT_CONNECT_TIMEOUT`](Self::DEFAULT_CONNECT_TIMEOUT).
    connect_timeout(timeout: Duration), get_connect_timeout: Duration;
    /// How an `amqps://` URL's TLS is set up: extra CA certificates and a
    /// client certificate. Default: [`TlsOptions::default`], which verifies
    /// the broker's certificate against the operating system's roots.
    /// Setting anything here for an `amqp://` URL fails every connect with
    /// [`TlsError::NotAmqps`](crate::TlsError::NotAmqps), rather than send
    /// in the clear what was meant to be encrypted.
    tls(tls: TlsOptions), get_tls: &TlsOptions;
});

/// Which routing key a message is published with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RoutingKey {
    /// The destination name, which the queue declared by
    /// [`Topology`](crate::Topology) is bound with. The ordering key still
    /// travels in the `ce-partitionkey` header.
    #[default]
    Destination,
    /// The envelope's ordering key (the destination name when it has none),
    /// for exchanges that route on it, such as a consistent-hash exchange.
    OrderingKey,
}

/// Where the messages of one destination go.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DestinationOptions {
    pub(crate) exchange: Option<String>,
    pub(crate) routing_key: RoutingKey,
}

settings!(DestinationOptions {
    /// The exchange to publish to. Default: the exchange named after the
    /// destination, which [`Topology`](crate::Topology) declares.
    exchange(exchange: impl Into<String>) = Some(exchange.into()),
        get_exchange: Option<&str> = as_deref();
    /// The routing key; default [`RoutingKey::Destination`].
    routing_key(routing_key: RoutingKey), get_routing_key: RoutingKey;
});

/// Settings of a [`RabbitPublisher`](crate::RabbitPublisher).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublisherOptions {
    pub(crate) max_message_size: usize,
    pub(crate) confirm_timeout: Duration,
    pub(crate) confirm_channels: usize,
    pub(crate) destinations: HashMap<String, DestinationOptions>,
}

impl PublisherOptions {
    /// Default [`max_message_size`](Self::max_message_size): 128 MiB, the
    /// default `max_message_size` of RabbitMQ 3.10.
    pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 128 * 1024 * 1024;
    /// Default [`confirm_timeout`](Self::confirm_timeout): 30 s.
    pub const DEFAULT_CONFIRM_TIMEOUT: Duration = Duration::from_secs(30);
    /// Default [`confirm_channels`](Self::confirm_channels): 2.
    pub const DEFAULT_CONFIRM_CHANNELS: usize = 2;
}

settings!(PublisherOptions {
    /// Payloads larger than this fail with
    /// [`PublishError::TooLarge`](tidings_core::PublishError::TooLarge)
    /// before anything is sent. Set it to the broker's `max_message_size`;
    /// default [`DEFAULT_MAX_MESSAGE_SIZE`](Self::DEFAULT_MAX_MESSAGE_SIZE).
    max_message_size(bytes: usize), get_max_message_size: usize;
    /// How long a batch waits for its publisher confirms before the
    /// unconfirmed messages fail with
    /// [`PublishError::Timeout`](tidings_core::PublishError::Timeout);
    /// default [`DEFAULT_CONFIRM_TIMEOUT`](Self::DEFAULT_CONFIRM_TIMEOUT).
    confirm_timeout(timeout: Duration), get_confirm_timeout: Duration;
    /// Confirm channels a batch is spread over, on the publisher's one
    /// connection. Each channel's messages are confirmed independently of
    /// the others', so the broker works on several at once. Messages with
    /// an ordering key go to the channel their key hashes to, in batch
    /// order, so a key's messages are never reordered; messages without
    /// one are cut into runs of consecutive messages, one per channel.
    ///
    /// At least 1; default
    /// [`DEFAULT_CONFIRM_CHANNELS`](Self::DEFAULT_CONFIRM_CHANNELS).
    ///
    /// ```
    /// use tidings_rabbitmq::PublisherOptions;
    ///
    /// let options = PublisherOptions::default().confirm_channels(2);
    /// assert_eq!(options.get_confirm_channels(), 2);
    /// ```
    confirm_channels(channels: usize) = channels.max(1), get_confirm_channels: usize;
});

destination_settings!(PublisherOptions, DestinationOptions);

impl Default for PublisherOptions {
    fn default() -> Self {
        Self {
            max_message_size: Self::DEFAULT_MAX_MESSAGE_SIZE,
            confirm_timeout: Self::DEFAULT_CONFIRM_TIMEOUT,
            confirm_channels: Self::DEFAULT_CONFIRM_CHANNELS,
            destinations: HashMap::new(),
        }
    }
}

/// Where a subscription to a stream starts reading (`x-stream-offset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StreamOffset {
    /// The oldest message the stream still holds.
    First,
    /// The last chunk of messages written.
    Last,
    /// The messages written after subscribing (the broker's default).
    Next,
    /// The message at this offset.
    Offset(u64),
}

/// Settings of a [`RabbitSource`](crate::RabbitSource).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceOptions {
    pub(crate) prefetch: u16,
    pub(crate) confirm_timeout: Duration,
    pub(crate) stream_offset: Option<StreamOffset>,
}

impl SourceOptions {
    /// Default [`prefetch`](Self::prefetch): 32 unsettled deliveries.
    pub const DEFAULT_PREFETCH: u16 = 32;
    /// Default [`confirm_timeout`](Self::confirm_timeout): 30 s.
    pub const DEFAULT_CONFIRM_TIMEOUT: Duration = Duration::from_secs(30);
}

settings!(SourceOptions {
    /// How many deliveries a subscription holds unsettled at most (the
    /// channel's `basic.qos` prefetch count, which a stream requires), at
    /// least 1; default [`DEFAULT_PREFETCH`](Self::DEFAULT_PREFETCH).
    prefetch(count: u16) = count.max(1), get_prefetch: u16;
    /// How long dead-lettering and delayed redelivery, which republish the
    /// message, wait for the broker's confirm; default
    /// [`DEFAULT_CONFIRM_TIMEOUT`](Self::DEFAULT_CONFIRM_TIMEOUT).
    confirm_timeout(timeout: Duration), get_confirm_timeout: Duration;
    /// Where each subscription to a stream
    /// ([`QueueKind::Stream`](crate::QueueKind::Stream)) starts, sent as
    /// the consumer's `x-stream-offset` argument; default: not sent, so
    /// the broker starts at [`StreamOffset::Next`]. The offset is not
    /// stored: a subscription renewed after a reconnect starts here again,
    /// so [`StreamOffset::First`] with the inbox is the way to see every
    /// message (the inbox skips those handled before). Only for streams:
    /// classic and quorum queues refuse the argument.
    stream_offset(offset: StreamOffset) = Some(offset), get_stream_offset: Option<StreamOffset>;
});

impl Default for SourceOptions {
    fn default() -> Self {
        Self {
            prefetch: Self::DEFAULT_PREFETCH,
            confirm_timeout: Self::DEFAULT_CONFIRM_TIMEOUT,
            stream_offset: None,
        }
    }
}
