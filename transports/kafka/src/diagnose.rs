//! Telling certificate failures apart.
//!
//! librdkafka reports every failed check of a broker's certificate as
//! "certificate verify failed", whether no trusted CA signed it, it has
//! expired, or it names another host. On such a failure the broker's
//! certificate is fetched once more, by rustls with the client's CA file
//! and host-name setting, whose verdict says which it is.

use std::io::ErrorKind;
use std::net::{TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rdkafka::ClientConfig;
use rustls::CertificateError as Cert;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};

/// How long the second look at a certificate may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);
/// The CA store of the system, where librdkafka looks without a CA file.
const SYSTEM_CA_FILE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// What is wrong with a broker's certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Problem {
    Untrusted(String),
    Expired(String),
    HostName(String),
}

/// The certificate checks a client makes.
#[derive(Debug, Clone)]
pub(crate) struct Probe {
    ca_file: Option<PathBuf>,
    verify_hostname: bool,
}

impl Probe {
    /// The checks of a client with `config`.
    pub(crate) fn new(config: &ClientConfig) -> Self {
        Self {
            ca_file: config.get("ssl.ca.location").map(PathBuf::from),
            verify_hostname: config.get("ssl.endpoint.identification.algorithm") != Some("none"),
        }
    }

    /// What is wrong with the certificate of `broker` (`host:port`); `None`
    /// when the probe cannot tell or finds nothing wrong.
    pub(crate) fn certificate_problem(&self, broker: &str) -> Option<Problem> {
        let (host, port) = broker.rsplit_once(':')?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let port: u16 = port.parse().ok()?;
        let roots = self.roots()?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .ok()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let name = ServerName::try_from(host.to_owned()).ok()?;
        let mut connection = rustls::ClientConnection::new(Arc::new(config), name).ok()?;
        let address = (host, port).to_socket_addrs().ok()?.next()?;
        let mut socket = TcpStream::connect_timeout(&address, PROBE_TIMEOUT).ok()?;
        socket.set_read_timeout(Some(PROBE_TIMEOUT)).ok()?;
        socket.set_write_timeout(Some(PROBE_TIMEOUT)).ok()?;
        while connection.is_handshaking() {
            match connection.complete_io(&mut socket) {
                Ok(_) => {}
                Err(error) if error.kind() == ErrorKind::InvalidData => {
                    let reason = error.get_ref()?.downcast_ref::<rustls::Error>()?;
                    return self.judge(reason);
                }
                Err(_) => return None,
            }
        }
        None
    }

    /// The CAs the client trusts.
    fn roots(&self) -> Option<rustls::RootCertStore> {
        let path = self
            .ca_file
            .clone()
            .unwrap_or_else(|| PathBuf::from(SYSTEM_CA_FILE));
        let mut roots = rustls::RootCertStore::empty();
        for certificate in CertificateDer::pem_file_iter(&path).ok()? {
            roots.add(certificate.ok()?).ok()?;
        }
        Some(roots)
    }

    fn judge(&self, reason: &rustls::Error) -> Option<Problem> {
        let rustls::Error::InvalidCertificate(reason) = reason else {
            return None;
        };
        let text = reason.to_string();
        match reason {
            Cert::Expired
            | Cert::ExpiredContext { .. }
            | Cert::NotValidYet
            | Cert::NotValidYetContext { .. } => Some(Problem::Expired(text)),
            Cert::NotValidForName | Cert::NotValidForNameContext { .. } => {
                self.verify_hostname.then_some(Problem::HostName(text))
            }
            _ => Some(Problem::Untrusted(text)),
        }
    }
}
