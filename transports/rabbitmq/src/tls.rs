//! TLS settings of an `amqps://` connection, read into lapin's TLS
//! configuration at each connect.

use std::fmt;
use std::path::{Path, PathBuf};

use lapin::tcp::{OwnedIdentity, OwnedTLSConfig};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use crate::tls_error::TlsError;

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

    /// The [`ca_certificates`](Self::ca_certificates) setting.
    pub fn get_ca_certificates(&self) -> Option<&Pem> {
        self.ca_certificates.as_ref()
    }

    /// The [`client_certificate`](Self::client_certificate) setting: the
    /// chain and the key.
    pub fn get_client_certificate(&self) -> Option<(&Pem, &Pem)> {
        self.client_certificate
            .as_ref()
            .map(|(chain, key)| (chain, key))
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

    pub(crate) fn is_set(&self) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

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
