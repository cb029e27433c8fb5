//! Why a TLS connection to the broker could not be opened: a setting
//! that cannot be used, or a handshake the server or the client refused.

use std::io;
use std::path::PathBuf;

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

    pub(crate) fn into_lapin(self) -> lapin::Error {
        io::Error::new(io::ErrorKind::InvalidInput, self).into()
    }
}
