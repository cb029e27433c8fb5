//! Settings of the client, the publisher and the source.

use std::collections::BTreeMap;
use std::time::Duration;

use rdkafka::ClientConfig;
use tidings_core::settings;

use crate::security::{self, KafkaSasl, KafkaTls};

/// Where the brokers are, how to reach them (TLS, SASL), and any other
/// librdkafka property the clients should use. The publisher, the source
/// and the topology client all take these options.
///
/// ```
/// use tidings_kafka::{ClientOptions, KafkaSasl, KafkaTls, SaslMechanism};
///
/// let client = ClientOptions::new("b-1.example.com:9096,b-2.example.com:9096")
///     .tls(KafkaTls::default())
///     .sasl(KafkaSasl::new(SaslMechanism::ScramSha512, "relay", "secret"))
///     .property("ssl.endpoint.identification.algorithm", "https");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct ClientOptions {
    pub(crate) brokers: String,
    pub(crate) client_id: String,
    pub(crate) request_timeout: Duration,
    pub(crate) tls: Option<KafkaTls>,
    pub(crate) sasl: Option<KafkaSasl>,
    pub(crate) properties: BTreeMap<String, String>,
}

/// Passwords, in typed settings or in properties, stay out of the output.
impl std::fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let properties: BTreeMap<&str, &str> = self
            .properties
            .iter()
            .map(|(name, value)| {
                let secret = name.contains("password") || name.contains("secret");
                (
                    name.as_str(),
                    if secret { "<redacted>" } else { value.as_str() },
                )
            })
            .collect();
        f.debug_struct("ClientOptions")
            .field("brokers", &self.brokers)
            .field("client_id", &self.client_id)
            .field("request_timeout", &self.request_timeout)
            .field("tls", &self.tls)
            .field("sasl", &self.sasl)
            .field("properties", &properties)
            .finish()
    }
}

impl ClientOptions {
    /// Default [`client_id`](Self::client_id).
    pub const DEFAULT_CLIENT_ID: &'static str = "tidings";
    /// Default [`request_timeout`](Self::request_timeout): 10 s.
    pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

    /// Options for the brokers at `brokers`, a comma-separated list of
    /// `host:port` (librdkafka's `bootstrap.servers`).
    pub fn new(brokers: impl Into<String>) -> Self {
        Self {
            brokers: brokers.into(),
            client_id: Self::DEFAULT_CLIENT_ID.to_owned(),
            request_timeout: Self::DEFAULT_REQUEST_TIMEOUT,
            tls: None,
            sasl: None,
            properties: BTreeMap::new(),
        }
    }

    /// Sets any librdkafka property (`sasl.oauthbearer.config`,
    /// `ssl.cipher.suites`, ..); it overrides what the transport and the
    /// typed settings set, so use it with care. Default: none.
    pub fn property(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.properties.insert(name.into(), value.into());
        self
    }

    /// The brokers, given to [`new`](Self::new).
    pub fn get_brokers(&self) -> &str {
        &self.brokers
    }

    /// The [`property`](Self::property) `name`, if set.
    pub fn get_property(&self, name: &str) -> Option<&str> {
        self.properties.get(name).map(String::as_str)
    }

    /// The librdkafka configuration these options give, for a client of
    /// the caller's own (a tool that reads a topic whole, for example).
    pub fn client_config(&self) -> ClientConfig {
        self.config(&[])
    }

    /// A librdkafka configuration with these options and `own` (the
    /// client's own settings) under the caller's properties.
    pub(crate) fn config(&self, own: &[(&str, String)]) -> ClientConfig {
        let mut config = ClientConfig::new();
        config
            .set("bootstrap.servers", &self.brokers)
            .set("client.id", &self.client_id)
            .set(
                "socket.timeout.ms",
                millis(self.request_timeout).to_string(),
            );
        for (name, value) in own {
            config.set(*name, value);
        }
        for (name, value) in security::properties(self.tls.as_ref(), self.sasl.as_ref()) {
            config.set(name, value);
        }
        for (name, value) in &self.properties {
            config.set(name, value);
        }
        config
    }
}

settings!(ClientOptions {
    /// The `client.id` the brokers see in their logs and quotas; default
    /// [`DEFAULT_CLIENT_ID`](Self::DEFAULT_CLIENT_ID).
    client_id(client_id: impl Into<String>) = client_id.into(), get_client_id: &str;
    /// How long a metadata or administration request may take; default
    /// [`DEFAULT_REQUEST_TIMEOUT`](Self::DEFAULT_REQUEST_TIMEOUT).
    request_timeout(timeout: Duration), get_request_timeout: Duration;
    /// TLS to the brokers; none by default. With it, `security.protocol`
    /// is `SSL`, or `SASL_SSL` with [`sasl`](Self::sasl) too.
    tls(tls: KafkaTls) = Some(tls), get_tls: Option<&KafkaTls> = as_ref();
    /// A SASL login; none by default. With it, `security.protocol` is
    /// `SASL_SSL`, or `SASL_PLAINTEXT` without [`tls`](Self::tls).
    sasl(sasl: KafkaSasl) = Some(sasl), get_sasl: Option<&KafkaSasl> = as_ref();
});

/// Settings of the publisher.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublisherOptions {
    pub(crate) message_timeout: Duration,
    pub(crate) max_message_bytes: usize,
    pub(crate) linger: Duration,
}

impl PublisherOptions {
    /// Default [`message_timeout`](Self::message_timeout): 30 s.
    pub const DEFAULT_MESSAGE_TIMEOUT: Duration = Duration::from_secs(30);
    /// Default [`max_message_bytes`](Self::max_message_bytes): 1,000,000,
    /// librdkafka's and Kafka's default.
    pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 1_000_000;
    /// Default [`linger`](Self::linger): 5 ms, librdkafka's default.
    pub const DEFAULT_LINGER: Duration = Duration::from_millis(5);

    /// The producer settings: idempotent, acknowledged by all in-sync
    /// replicas, never creating topics.
    pub(crate) fn producer_properties(&self) -> Vec<(&'static str, String)> {
        vec![
            ("enable.idempotence", "true".to_owned()),
            ("acks", "all".to_owned()),
            (
                "message.timeout.ms",
                millis(self.message_timeout).to_string(),
            ),
            (
                "message.max.bytes",
                self.max_message_bytes.max(1000).to_string(),
            ),
            ("linger.ms", millis(self.linger).to_string()),
            ("allow.auto.create.topics", "false".to_owned()),
        ]
    }
}

settings!(PublisherOptions {
    /// How long a record may wait for the brokers' acknowledgement, retries
    /// included, before its publish fails as timed out (a transient
    /// failure the relay retries). Default
    /// [`DEFAULT_MESSAGE_TIMEOUT`](Self::DEFAULT_MESSAGE_TIMEOUT).
    message_timeout(timeout: Duration), get_message_timeout: Duration;
    /// The largest record the publisher sends; larger ones fail with
    /// `TooLarge` before reaching a broker. Keep it at or below the
    /// topics' `max.message.bytes`. Default
    /// [`DEFAULT_MAX_MESSAGE_BYTES`](Self::DEFAULT_MAX_MESSAGE_BYTES).
    max_message_bytes(bytes: usize), get_max_message_bytes: usize;
    /// How long librdkafka waits to fill a batch (`linger.ms`); default
    /// [`DEFAULT_LINGER`](Self::DEFAULT_LINGER).
    linger(linger: Duration), get_linger: Duration;
});

impl Default for PublisherOptions {
    fn default() -> Self {
        Self {
            message_timeout: Self::DEFAULT_MESSAGE_TIMEOUT,
            max_message_bytes: Self::DEFAULT_MAX_MESSAGE_BYTES,
            linger: Self::DEFAULT_LINGER,
        }
    }
}

/// Settings of the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceOptions {
    pub(crate) group: String,
    pub(crate) commit_interval: Duration,
    pub(crate) revoke_grace: Duration,
    pub(crate) prefetch: usize,
    pub(crate) max_held: usize,
    pub(crate) session_timeout: Duration,
    pub(crate) publisher: PublisherOptions,
}

impl SourceOptions {
    /// Default [`commit_interval`](Self::commit_interval): 200 ms.
    pub const DEFAULT_COMMIT_INTERVAL: Duration = Duration::from_millis(200);
    /// Default [`revoke_grace`](Self::revoke_grace): 5 s.
    pub const DEFAULT_REVOKE_GRACE: Duration = Duration::from_secs(5);
    /// Default [`prefetch`](Self::prefetch): 256 deliveries.
    pub const DEFAULT_PREFETCH: usize = 256;
    /// Default [`max_held`](Self::max_held): 1,000 retry records.
    pub const DEFAULT_MAX_HELD: usize = 1_000;
    /// Default [`session_timeout`](Self::session_timeout): 10 s.
    pub const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(10);

    /// Options for the consumer group `group` (`group.id`): the members of
    /// one group share a topic's partitions, each record going to one of
    /// them.
    pub fn new(group: impl Into<String>) -> Self {
        Self {
            group: group.into(),
            commit_interval: Self::DEFAULT_COMMIT_INTERVAL,
            revoke_grace: Self::DEFAULT_REVOKE_GRACE,
            prefetch: Self::DEFAULT_PREFETCH,
            max_held: Self::DEFAULT_MAX_HELD,
            session_timeout: Self::DEFAULT_SESSION_TIMEOUT,
            publisher: PublisherOptions::default(),
        }
    }

    /// The consumer group, given to [`new`](Self::new).
    pub fn get_group(&self) -> &str {
        &self.group
    }

    /// The consumer settings: offsets committed by the source only, reading
    /// from the start of a partition the group never committed.
    pub(crate) fn consumer_properties(&self) -> Vec<(&'static str, String)> {
        vec![
            ("group.id", self.group.clone()),
            ("enable.auto.commit", "false".to_owned()),
            ("enable.auto.offset.store", "false".to_owned()),
            ("auto.offset.reset", "earliest".to_owned()),
            ("allow.auto.create.topics", "false".to_owned()),
            (
                "session.timeout.ms",
                millis(self.session_timeout).to_string(),
            ),
            (
                "heartbeat.interval.ms",
                (millis(self.session_timeout) / 4).max(100).to_string(),
            ),
            ("enable.partition.eof", "false".to_owned()),
        ]
    }
}

settings!(SourceOptions {
    /// How often settled offsets are committed. A crash redelivers what was
    /// settled in the last interval; the inbox absorbs the duplicates.
    /// Default [`DEFAULT_COMMIT_INTERVAL`](Self::DEFAULT_COMMIT_INTERVAL).
    commit_interval(interval: Duration), get_commit_interval: Duration;
    /// How long a rebalance waits for deliveries being handled on revoked
    /// partitions to settle before giving those partitions up; what is
    /// still unsettled then is redelivered to their next owner. Default
    /// [`DEFAULT_REVOKE_GRACE`](Self::DEFAULT_REVOKE_GRACE).
    revoke_grace(grace: Duration), get_revoke_grace: Duration;
    /// How many deliveries are read ahead of the handlers (at least 1);
    /// default [`DEFAULT_PREFETCH`](Self::DEFAULT_PREFETCH).
    prefetch(prefetch: usize) = prefetch.max(1), get_prefetch: usize;
    /// How many retry records waiting for their time are held in memory
    /// before the retry topic's partitions are paused (at least 1); default
    /// [`DEFAULT_MAX_HELD`](Self::DEFAULT_MAX_HELD).
    max_held(max_held: usize) = max_held.max(1), get_max_held: usize;
    /// How long the group waits for a silent member before giving its
    /// partitions to the others (`session.timeout.ms`); default
    /// [`DEFAULT_SESSION_TIMEOUT`](Self::DEFAULT_SESSION_TIMEOUT).
    session_timeout(timeout: Duration), get_session_timeout: Duration;
    /// The settings of the producer that writes retry and dead-letter
    /// records; default [`PublisherOptions::default`].
    publisher(publisher: PublisherOptions), get_publisher: &PublisherOptions;
});

/// Whole milliseconds, at least one.
pub(crate) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis())
        .unwrap_or(u64::MAX)
        .max(1)
}
