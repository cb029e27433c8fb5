//! TLS settings of an `amqps://` connection, turned into lapin's TLS
//! configuration at each connect, and the explanation of a failed
//! handshake.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use lapin::tcp::{OwnedIdentity, OwnedTLSConfig};
use lapin::uri::{AMQPScheme, AMQPUri};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// PEM text, held in memory or read from a file.
///
/// A file is read each time a connection opens, so a renewed certificate
/// is used from the next reconnect on.
#[derive(Clone, PartialEq, Eq)]
pub struct Pem(Source);

#[derive(Clone, PartialEq, Eq)]
enum Source {
    Inline(Vec<u8>),
    File(PathBuf),
}

impl Pem {
    /// PEM text held in memory, such as a certificate passed in an
    /// environment variable.
    pub fn new(text: impl Into<Vec<u8>>) -> Self {
        Self(Source::Inline(text.into()))
    }

    /// The PEM file at `path`.
    pub fn file(path: impl Into<PathBuf>) -> Self {
        Self(Source::File(path.into()))
    }

    fn read(&self, what: &'static str) -> Result<Vec<u8>, TlsError> {
        match &self.0 {
            Source::Inline(text) => Ok(text.clone()),
            Source::File(path) => std::fs::read(path).map_err(|source| TlsError::Read {
                what,
                path: path.clone(),
                source,
            }),
        }
    }

    fn origin(&self) -> String {
        match &self.0 {
            Source::Inline(_) => "PEM text in memory".to_owned(),
            Source::File(path) => path.display().to_string(),
        }
    }
}

/// The text of a key stays out of logs.
impl fmt::Debug for Pem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Source::Inline(text) => write!(f, "Pem(<{} bytes>)", text.len()),
            Source::File(path) => f.debug_tuple("Pem").field(&Path::new(path)).finish(),
        }
    }
}

/// TLS settings of an `amqps://` connection; see
/// [`ConnectionOptions::tls`](crate::ConnectionOptions::tls).
///
/// The broker's certificate is always verified, against the operating
/// system's root certificates and the [`ca_certificates`](Self::ca_certificates)
/// given here, and it must be valid for the host name in the URL.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TlsOptions {
    pub(crate) ca_certificates: Option<Pem>,
    pub(crate) client_certificate: Option<(Pem, Pem)>,
}

impl TlsOptions {
    /// CA certificates (a PEM bundle) trusted in addition to the operating
    /// system's roots, for a broker whose certificate a private CA signed.
    /// Default: none, the system's roots only.
    pub fn ca_certificates(mut self, bundle: Pem) -> Self {
        self.ca_certificates = Some(bundle);
        self
    }

    /// The certificate chain and private key (PKCS#8, PKCS#1 or SEC1, in
    /// PEM) presented to a broker that asks for one: mutual TLS. Default:
    /// none.
    pub fn client_certificate(mut self, chain: Pem, key: Pem) -> Self {
        self.client_certificate = Some((chain, key));
        self
    }

    /// lapin's configuration for these options, with every PEM read and
    /// checked first, so a bad file is named instead of silently skipped.
    pub(crate) fn load(&self) -> Result<OwnedTLSConfig, TlsError> {
        let cert_chain = match &self.ca_certificates {
            Some(bundle) => Some(certificates(bundle, "CA certificates")?),
            None => None,
        };
        let identity = match &self.client_certificate {
            Some((chain, key)) => Some(OwnedIdentity::PKCS8 {
                pem: certificates(chain, "client certificate")?.into_bytes(),
                key: private_key(key)?,
            }),
            None => None,
        };
        Ok(OwnedTLSConfig {
            identity,
            cert_chain,
        })
    }

    fn is_set(&self) -> bool {
        self.ca_certificates.is_some() || self.client_certificate.is_some()
    }
}

/// The PEM text of `pem`, which must hold at least one certificate.
fn certificates(pem: &Pem, what: &'static str) -> Result<String, TlsError> {
    let text = pem.read(what)?;
    let invalid = |reason: String| TlsError::Pem {
        what,
        origin: pem.origin(),
        reason,
    };
    let parsed = CertificateDer::pem_slice_iter(&text)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid(e.to_string()))?;
    if parsed.is_empty() {
        return Err(invalid("no CERTIFICATE block".to_owned()));
    }
    String::from_utf8(text).map_err(|e| invalid(e.to_string()))
}

/// The PEM text of `pem`, which must hold a private key.
fn private_key(pem: &Pem) -> Result<Vec<u8>, TlsError> {
    let what = "client private key";
    let text = pem.read(what)?;
    PrivateKeyDer::from_pem_slice(&text).map_err(|e| TlsError::Pem {
        what,
        origin: pem.origin(),
        reason: e.to_string(),
    })?;
    Ok(text)
}

/// Why a TLS connection could not be opened. Carried as the source of the
/// connection's I/O error, so it shows in the error chain of whatever
/// failed to connect, and [`TlsError::find`] gets it back.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// A PEM file could not be read.
    #[error("cannot read the {what} from {path}")]
    Read {
        /// Which setting the file belongs to.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The file system's answer.
        #[source]
        source: io::Error,
    },
    /// A PEM file or text holds no usable certificate or key.
    #[error("{origin} holds no usable {what}: {reason}")]
    Pem {
        /// Which setting the text belongs to.
        what: &'static str,
        /// The file, or that the text was given in memory.
        origin: String,
        /// What is wrong with it.
        reason: String,
    },
    /// TLS options were given for a URL that does not use TLS.
    #[error(
        "TLS options are set but the URL for {server} is amqp://; use amqps:// to connect over TLS"
    )]
    NotAmqps {
        /// Host and port.
        server: String,
    },
    /// The broker's certificate was refused: it is not signed by a trusted
    /// CA, not valid for the host name, expired, or otherwise invalid.
    #[error("the certificate of {server} was refused: {reason}")]
    CertificateRefused {
        /// Host and port.
        server: String,
        /// Why, in rustls' words.
        reason: String,
    },
    /// The broker ended the handshake, for example because it requires a
    /// client certificate and none or an unknown one was presented.
    #[error("{server} refused the TLS handshake: {reason}")]
    HandshakeRefused {
        /// Host and port.
        server: String,
        /// The alert it sent, in rustls' words.
        reason: String,
    },
    /// The server answered in something other than TLS: an amqps:// URL
    /// names a plain AMQP port.
    #[error(
        "{server} does not speak TLS ({reason}); is this a plain AMQP port that wants amqp://?"
    )]
    NotTls {
        /// Host and port.
        server: String,
        /// What rustls read instead.
        reason: String,
    },
    /// The server closed the connection on the AMQP protocol header, as a
    /// TLS-only port does when spoken to in plain AMQP.
    #[error(
        "{server} closed the connection on the plain AMQP greeting ({reason}); if this port speaks TLS only, use amqps://"
    )]
    PlainToTls {
        /// Host and port.
        server: String,
        /// The I/O error seen.
        reason: String,
    },
}

impl TlsError {
    /// The TLS error anywhere in `error`'s chain of sources, for example
    /// under a [`PublishError`](tidings_core::PublishError) or a
    /// [`TopologyError`](crate::TopologyError).
    pub fn find<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a TlsError> {
        let mut next = Some(error);
        while let Some(current) = next {
            if let Some(found) = current.downcast_ref::<TlsError>() {
                return Some(found);
            }
            // An I/O error's source skips the error it wraps.
            let wrapped = current
                .downcast_ref::<io::Error>()
                .and_then(io::Error::get_ref);
            if let Some(found) = wrapped.and_then(|inner| inner.downcast_ref::<TlsError>()) {
                return Some(found);
            }
            next = current.source();
        }
        None
    }

    fn into_lapin(self) -> lapin::Error {
        io::Error::new(io::ErrorKind::InvalidInput, self).into()
    }
}

/// lapin's TLS configuration for a connection to `uri`; fails when the
/// options cannot be used, so no connection is tried.
pub(crate) fn config(options: &TlsOptions, uri: &AMQPUri) -> Result<OwnedTLSConfig, lapin::Error> {
    if uri.scheme == AMQPScheme::AMQP {
        if options.is_set() {
            return Err(TlsError::NotAmqps {
                server: server(uri),
            }
            .into_lapin());
        }
        return Ok(OwnedTLSConfig::default());
    }
    options.load().map_err(TlsError::into_lapin)
}

/// `error`, from opening a connection to `uri`, with what it means when it
/// is a failed TLS handshake or a TLS port spoken to in plain AMQP.
pub(crate) fn explain(error: lapin::Error, uri: &AMQPUri) -> lapin::Error {
    let lapin::ErrorKind::IOError(io) = error.kind() else {
        return error;
    };
    let server = server(uri);
    let explained = match (&uri.scheme, io.get_ref()) {
        (AMQPScheme::AMQPS, Some(inner)) => match inner.downcast_ref::<rustls::Error>() {
            Some(rustls::Error::InvalidCertificate(reason)) => TlsError::CertificateRefused {
                server,
                reason: describe(reason),
            },
            Some(rustls::Error::AlertReceived(alert)) => TlsError::HandshakeRefused {
                server,
                reason: format!("alert {alert:?}"),
            },
            Some(rustls::Error::InvalidMessage(reason)) => TlsError::NotTls {
                server,
                reason: format!("{reason:?}"),
            },
            _ => return error,
        },
        (AMQPScheme::AMQP, _)
            if matches!(
                io.kind(),
                io::ErrorKind::ConnectionReset
                    | io::ErrorKind::ConnectionAborted
                    | io::ErrorKind::UnexpectedEof
            ) =>
        {
            TlsError::PlainToTls {
                server,
                reason: io.to_string(),
            }
        }
        _ => return error,
    };
    explained.into_lapin()
}

/// rustls' reason, with what the terse ones mean.
fn describe(reason: &rustls::CertificateError) -> String {
    use rustls::CertificateError::{Expired, ExpiredContext, UnknownIssuer};
    match reason {
        UnknownIssuer => "no trusted CA signed it (UnknownIssuer); give the broker's CA with \
             TlsOptions::ca_certificates"
            .to_owned(),
        Expired | ExpiredContext { .. } => format!("it has expired ({reason})"),
        _ => reason.to_string(),
    }
}

fn server(uri: &AMQPUri) -> String {
    format!("{}:{}", uri.authority.host, uri.authority.port)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uri(url: &str) -> AMQPUri {
        url.parse().expect("url")
    }

    #[test]
    fn refuses_tls_options_on_a_plain_url() {
        let options = TlsOptions::default().ca_certificates(Pem::new("x"));
        let error = config(&options, &uri("amqp://localhost:5672/%2f")).expect_err("refused");
        let found = TlsError::find(&error).expect("tls error");
        assert!(matches!(found, TlsError::NotAmqps { server } if server == "localhost:5672"));
    }

    #[test]
    fn names_a_missing_file_and_text_without_certificates() {
        let options = TlsOptions::default().ca_certificates(Pem::file("/nonexistent/ca.pem"));
        let error = options.load().expect_err("missing file");
        assert!(error.to_string().contains("/nonexistent/ca.pem"), "{error}");

        let options = TlsOptions::default().ca_certificates(Pem::new("not pem"));
        let error = options.load().expect_err("no certificate");
        assert!(matches!(error, TlsError::Pem { .. }), "{error:?}");

        let key = Pem::new("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
        let options = TlsOptions::default().client_certificate(key.clone(), key);
        let error = options.load().expect_err("no key");
        assert!(error.to_string().contains("client private key"), "{error}");
    }

    #[test]
    fn keeps_key_text_out_of_debug_output() {
        let pem = Pem::new("-----BEGIN PRIVATE KEY-----\nsecret\n-----END PRIVATE KEY-----\n");
        assert!(!format!("{pem:?}").contains("secret"));
    }
}
