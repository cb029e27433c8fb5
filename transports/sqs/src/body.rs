//! The payload as an SQS message body.
//!
//! SQS bodies are non-empty text of the characters XML allows. A payload
//! that is such text travels as it is; any other payload (binary, or text
//! with control characters) travels base64-encoded, and an empty payload as
//! a single `-`. The [`BODY_ENCODING_ATTRIBUTE`] attribute says which.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;

/// The attribute naming the body encoding: `base64` or `empty`; absent for
/// a payload sent as it is.
pub const BODY_ENCODING_ATTRIBUTE: &str = "tidings-body-encoding";

const BASE64: &str = "base64";
const EMPTY: &str = "empty";
const EMPTY_BODY: &str = "-";

/// A body that cannot be turned back into a payload.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum BodyError {
    /// The body encoding attribute names an encoding this crate does not
    /// know.
    #[error("unknown body encoding {0:?}")]
    UnknownEncoding(String),
    /// A base64 body that does not decode.
    #[error("body is not valid base64")]
    Base64(#[source] base64::DecodeError),
}

/// Whether SQS accepts `c` in a body or attribute value.
pub(crate) fn is_allowed_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}')
        || c >= '\u{10000}'
}

/// Whether SQS accepts `text` as a body or attribute value.
pub(crate) fn is_allowed_text(text: &str) -> bool {
    !text.is_empty() && text.chars().all(is_allowed_char)
}

/// The body for `payload` and the encoding attribute's value, if any.
pub(crate) fn encode(payload: &Bytes) -> (String, Option<&'static str>) {
    if payload.is_empty() {
        return (EMPTY_BODY.to_owned(), Some(EMPTY));
    }
    match std::str::from_utf8(payload) {
        Ok(text) if is_allowed_text(text) => (text.to_owned(), None),
        _ => (STANDARD.encode(payload), Some(BASE64)),
    }
}

/// The payload a body and its encoding attribute stand for.
pub(crate) fn decode(body: &str, encoding: Option<&str>) -> Result<Bytes, BodyError> {
    match encoding {
        None => Ok(Bytes::copy_from_slice(body.as_bytes())),
        Some(EMPTY) => Ok(Bytes::new()),
        Some(BASE64) => STANDARD
            .decode(body)
            .map(Bytes::from)
            .map_err(BodyError::Base64),
        Some(other) => Err(BodyError::UnknownEncoding(other.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(payload: &[u8]) -> (String, Option<&'static str>) {
        let payload = Bytes::copy_from_slice(payload);
        let (body, encoding) = encode(&payload);
        assert!(is_allowed_text(&body));
        assert_eq!(decode(&body, encoding).unwrap(), payload);
        (body, encoding)
    }

    #[test]
    fn text_travels_as_it_is() {
        assert_eq!(
            round_trip("{\"ü\":1}".as_bytes()),
            ("{\"ü\":1}".to_owned(), None)
        );
    }

    #[test]
    fn binary_control_characters_and_empty_payloads_are_encoded() {
        assert_eq!(round_trip(&[0, 159, 255]).1, Some(BASE64));
        assert_eq!(round_trip(b"a\x01b").1, Some(BASE64));
        assert_eq!(round_trip(b"").1, Some(EMPTY));
    }

    #[test]
    fn unknown_encodings_are_reported() {
        assert!(matches!(
            decode("x", Some("rot13")),
            Err(BodyError::UnknownEncoding(_))
        ));
        assert!(matches!(
            decode("!!", Some(BASE64)),
            Err(BodyError::Base64(_))
        ));
    }
}
