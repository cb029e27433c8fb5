//! TLS and SASL settings, and the librdkafka properties they give.

use std::fmt;
use std::path::PathBuf;

/// TLS to the brokers (librdkafka's `ssl.*` settings), attached with
/// [`ClientOptions::tls`](crate::ClientOptions::tls).
///
/// ```
/// use tidings_kafka::{ClientOptions, KafkaTls};
///
/// let client = ClientOptions::new("kafka.example.com:9093").tls(
///     KafkaTls::default()
///         .ca_file("/etc/kafka/ca.pem")
///         .client_certificate("/etc/kafka/client.pem", "/etc/kafka/client.key"),
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KafkaTls {
    pub(crate) ca_file: Option<PathBuf>,
    pub(crate) client_certificate: Option<(PathBuf, PathBuf)>,
    pub(crate) verify_hostname: bool,
}

impl KafkaTls {
    /// Default [`verify_hostname`](Self::verify_hostname): `true`.
    pub const DEFAULT_VERIFY_HOSTNAME: bool = true;

    /// The PEM file of the CA (or CAs) that signed the brokers'
    /// certificates (`ssl.ca.location`). Unset by default: the system's CA
    /// store, which trusts managed services with public certificates.
    pub fn ca_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.ca_file = Some(path.into());
        self
    }

    /// The client's certificate and its private key, PEM files
    /// (`ssl.certificate.location`, `ssl.key.location`), for brokers that
    /// require one (mutual TLS). Unset by default.
    pub fn client_certificate(
        mut self,
        certificate: impl Into<PathBuf>,
        key: impl Into<PathBuf>,
    ) -> Self {
        self.client_certificate = Some((certificate.into(), key.into()));
        self
    }

    /// Whether the broker's certificate must name the host dialled
    /// (`ssl.endpoint.identification.algorithm` `https`, or `none`). Turn
    /// it off only for brokers whose certificates name no usable host.
    pub fn verify_hostname(mut self, verify: bool) -> Self {
        self.verify_hostname = verify;
        self
    }

    fn properties(&self) -> Vec<(&'static str, String)> {
        let mut properties = vec![(
            "ssl.endpoint.identification.algorithm",
            if self.verify_hostname {
                "https"
            } else {
                "none"
            }
            .to_owned(),
        )];
        if let Some(ca) = &self.ca_file {
            properties.push(("ssl.ca.location", ca.display().to_string()));
        }
        if let Some((certificate, key)) = &self.client_certificate {
            properties.push((
                "ssl.certificate.location",
                certificate.display().to_string(),
            ));
            properties.push(("ssl.key.location", key.display().to_string()));
        }
        properties
    }
}

impl Default for KafkaTls {
    fn default() -> Self {
        Self {
            ca_file: None,
            client_certificate: None,
            verify_hostname: Self::DEFAULT_VERIFY_HOSTNAME,
        }
    }
}

/// A SASL mechanism (`sasl.mechanisms`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SaslMechanism {
    /// `PLAIN`: the password itself is sent, so use it over TLS only.
    Plain,
    /// `SCRAM-SHA-256`.
    ScramSha256,
    /// `SCRAM-SHA-512`.
    ScramSha512,
}

impl SaslMechanism {
    /// The mechanism's name, as librdkafka and the brokers spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Plain => "PLAIN",
            Self::ScramSha256 => "SCRAM-SHA-256",
            Self::ScramSha512 => "SCRAM-SHA-512",
        }
    }
}

/// A SASL login (librdkafka's `sasl.*` settings), attached with
/// [`ClientOptions::sasl`](crate::ClientOptions::sasl). Its password never
/// appears in `Debug` output.
///
/// ```
/// use tidings_kafka::{ClientOptions, KafkaSasl, KafkaTls, SaslMechanism};
///
/// let client = ClientOptions::new("broker.example.com:9096")
///     .tls(KafkaTls::default())
///     .sasl(KafkaSasl::new(SaslMechanism::ScramSha512, "relay", "secret"));
/// assert!(!format!("{client:?}").contains("secret"));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct KafkaSasl {
    pub(crate) mechanism: SaslMechanism,
    pub(crate) username: String,
    pub(crate) password: String,
}

impl KafkaSasl {
    /// A login as `username` with `password`, by `mechanism`.
    pub fn new(
        mechanism: SaslMechanism,
        username: impl Into<String>,
        password: impl Into<String>,
    ) -> Self {
        Self {
            mechanism,
            username: username.into(),
            password: password.into(),
        }
    }

    /// The mechanism.
    pub fn mechanism(&self) -> SaslMechanism {
        self.mechanism
    }

    /// The user name.
    pub fn username(&self) -> &str {
        &self.username
    }

    fn properties(&self) -> Vec<(&'static str, String)> {
        vec![
            ("sasl.mechanisms", self.mechanism.as_str().to_owned()),
            ("sasl.username", self.username.clone()),
            ("sasl.password", self.password.clone()),
        ]
    }
}

impl fmt::Debug for KafkaSasl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KafkaSasl")
            .field("mechanism", &self.mechanism)
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// The `security.protocol` and the `ssl.*` and `sasl.*` properties of a
/// client with `tls` and `sasl`; none when neither is set.
pub(crate) fn properties(
    tls: Option<&KafkaTls>,
    sasl: Option<&KafkaSasl>,
) -> Vec<(&'static str, String)> {
    let protocol = match (tls.is_some(), sasl.is_some()) {
        (false, false) => return Vec::new(),
        (true, false) => "SSL",
        (true, true) => "SASL_SSL",
        (false, true) => "SASL_PLAINTEXT",
    };
    let mut properties = vec![("security.protocol", protocol.to_owned())];
    properties.extend(tls.map(KafkaTls::properties).unwrap_or_default());
    properties.extend(sasl.map(KafkaSasl::properties).unwrap_or_default());
    properties
}

#[cfg(test)]
mod tests {
    use super::*;

    fn protocol(tls: Option<&KafkaTls>, sasl: Option<&KafkaSasl>) -> Option<String> {
        properties(tls, sasl)
            .into_iter()
            .find(|(name, _)| *name == "security.protocol")
            .map(|(_, value)| value)
    }

    #[test]
    fn the_protocol_follows_what_is_attached() {
        let tls = KafkaTls::default().ca_file("/ca.pem");
        let sasl = KafkaSasl::new(SaslMechanism::ScramSha256, "u", "p");
        assert_eq!(protocol(None, None), None);
        assert_eq!(protocol(Some(&tls), None).as_deref(), Some("SSL"));
        assert_eq!(
            protocol(Some(&tls), Some(&sasl)).as_deref(),
            Some("SASL_SSL")
        );
        assert_eq!(
            protocol(None, Some(&sasl)).as_deref(),
            Some("SASL_PLAINTEXT")
        );
        let all = properties(Some(&tls), Some(&sasl));
        assert!(all.contains(&("ssl.ca.location", "/ca.pem".to_owned())));
        assert!(all.contains(&("sasl.mechanisms", "SCRAM-SHA-256".to_owned())));
    }

    #[test]
    fn the_password_stays_out_of_debug_output() {
        let sasl = KafkaSasl::new(SaslMechanism::Plain, "relay", "hunter2");
        assert!(!format!("{sasl:?}").contains("hunter2"));
    }
}
