//! What a TLS connection needs before its handshake, and what a failed one
//! means.

use std::io;
use std::path::PathBuf;

use lapin::tcp::OwnedTLSConfig;
use lapin::uri::{AMQPScheme, AMQPUri};

use crate::tls::TlsOptions;

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
    use crate::tls::Pem;

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
}
