//! Codecs turn typed payloads into bytes at the edges: when an event is
//! staged and when a consumer decodes a delivery. Everything in between moves
//! bytes.

use std::error::Error as StdError;

use bytes::Bytes;
use serde::{Serialize, de::DeserializeOwned};

/// Content type written by [`JsonCodec`].
pub const JSON_CONTENT_TYPE: &str = "application/json";
/// Content type written by [`RawCodec`].
pub const RAW_CONTENT_TYPE: &str = "application/octet-stream";

/// Encodes and decodes one payload type.
///
/// Implementations are plain values so specs holding them can be constants.
pub trait Codec<T>: Send + Sync {
    /// The MIME type of the encoded bytes, carried with every message.
    fn content_type(&self) -> &'static str;

    /// Encodes a payload.
    ///
    /// # Errors
    ///
    /// [`CodecError::Encode`] when the value cannot be serialized in the
    /// codec's format.
    fn encode(&self, value: &T) -> Result<Bytes, CodecError>;

    /// Decodes a payload.
    ///
    /// # Errors
    ///
    /// [`CodecError::Decode`] when the bytes are not a valid encoding of `T`.
    fn decode(&self, bytes: &[u8]) -> Result<T, CodecError>;
}

/// A payload that could not be encoded or decoded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// The value could not be encoded.
    #[error("cannot encode payload as {content_type}: {source}")]
    Encode {
        /// The codec's content type.
        content_type: &'static str,
        /// What the serializer reported.
        source: Box<dyn StdError + Send + Sync>,
    },
    /// The bytes do not decode into the expected type.
    #[error("cannot decode {content_type} payload: {source}")]
    Decode {
        /// The codec's content type.
        content_type: &'static str,
        /// What the deserializer reported.
        source: Box<dyn StdError + Send + Sync>,
    },
}

impl CodecError {
    /// Codec errors never go away by retrying: the same bytes fail again.
    pub fn is_transient(&self) -> bool {
        false
    }
}

/// JSON through serde, the default codec.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonCodec;

impl<T: Serialize + DeserializeOwned> Codec<T> for JsonCodec {
    fn content_type(&self) -> &'static str {
        JSON_CONTENT_TYPE
    }

    fn encode(&self, value: &T) -> Result<Bytes, CodecError> {
        serde_json::to_vec(value)
            .map(Bytes::from)
            .map_err(|e| CodecError::Encode {
                content_type: JSON_CONTENT_TYPE,
                source: e.into(),
            })
    }

    fn decode(&self, bytes: &[u8]) -> Result<T, CodecError> {
        serde_json::from_slice(bytes).map_err(|e| CodecError::Decode {
            content_type: JSON_CONTENT_TYPE,
            source: e.into(),
        })
    }
}

/// Passes bytes through untouched, for payloads encoded by the caller.
#[derive(Debug, Clone, Copy, Default)]
pub struct RawCodec;

impl Codec<Bytes> for RawCodec {
    fn content_type(&self) -> &'static str {
        RAW_CONTENT_TYPE
    }

    fn encode(&self, value: &Bytes) -> Result<Bytes, CodecError> {
        Ok(value.clone())
    }

    fn decode(&self, bytes: &[u8]) -> Result<Bytes, CodecError> {
        Ok(Bytes::copy_from_slice(bytes))
    }
}

impl Codec<Vec<u8>> for RawCodec {
    fn content_type(&self) -> &'static str {
        RAW_CONTENT_TYPE
    }

    fn encode(&self, value: &Vec<u8>) -> Result<Bytes, CodecError> {
        Ok(Bytes::copy_from_slice(value))
    }

    fn decode(&self, bytes: &[u8]) -> Result<Vec<u8>, CodecError> {
        Ok(bytes.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Order {
        id: u32,
    }

    #[test]
    fn json_round_trips() {
        let bytes = JsonCodec.encode(&Order { id: 7 }).unwrap();
        let back: Order = JsonCodec.decode(&bytes).unwrap();
        assert_eq!(back, Order { id: 7 });
    }

    #[test]
    fn json_decode_failure_is_permanent_and_explains() {
        let err = Codec::<Order>::decode(&JsonCodec, b"{\"id\": \"x\"}").unwrap_err();
        assert!(!err.is_transient());
        assert!(
            err.to_string()
                .starts_with("cannot decode application/json payload")
        );
    }

    #[test]
    fn raw_passes_bytes_through() {
        let bytes = Bytes::from_static(b"\x00\xff");
        assert_eq!(RawCodec.encode(&bytes).unwrap(), bytes);
        let back: Vec<u8> = RawCodec.decode(&bytes).unwrap();
        assert_eq!(back, vec![0, 255]);
    }
}
