//! What a TLS connection needs before its handshake, and what a failed one
//! means.

use std::io;

use lapin::tcp::OwnedTLSConfig;
use lapin::uri::{AMQPScheme, AMQPUri};

use crate::tls::TlsOptions;
use crate::tls_error::TlsError;

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
