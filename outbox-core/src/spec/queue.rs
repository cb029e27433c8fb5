use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use super::{SpecError, validate_name};
use crate::codec::{Codec, CodecError, JsonCodec};

/// Names a queue a consumer reads and the codec its payloads decode with.
pub struct QueueSpec<T, C = JsonCodec> {
    name: Cow<'static, str>,
    codec: C,
    payload: PhantomData<fn(T) -> T>,
}

impl<T> QueueSpec<T, JsonCodec> {
    /// A queue whose payloads are JSON.
    pub const fn json(name: &'static str) -> Self {
        Self::with_codec(name, JsonCodec)
    }

    /// A queue whose payloads are JSON, named at run time (see
    /// [`OutboxSpec::json_named`](crate::OutboxSpec::json_named)).
    pub fn json_named(name: impl Into<Cow<'static, str>>) -> Self {
        let mut spec = Self::json("");
        spec.name = name.into();
        spec
    }
}

impl<T, C> QueueSpec<T, C> {
    /// A queue with the given codec.
    pub const fn with_codec(name: &'static str, codec: C) -> Self {
        Self {
            name: Cow::Borrowed(name),
            codec,
            payload: PhantomData,
        }
    }

    /// A queue with the given codec, named at run time.
    pub fn with_codec_named(name: impl Into<Cow<'static, str>>, codec: C) -> Self {
        Self {
            name: name.into(),
            codec,
            payload: PhantomData,
        }
    }

    /// The queue's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The payload codec.
    pub const fn codec(&self) -> &C {
        &self.codec
    }

    /// Checks the name.
    ///
    /// # Errors
    ///
    /// [`SpecError::EmptyName`], [`SpecError::NameTooLong`] or
    /// [`SpecError::IllegalName`] when the queue's name is not a legal name.
    pub fn validate(&self) -> Result<(), SpecError> {
        validate_name("queue", &self.name)
    }
}

impl<T, C: Codec<T>> QueueSpec<T, C> {
    /// Decodes a payload received on this queue.
    ///
    /// # Errors
    ///
    /// [`CodecError::Decode`] when `payload` does not decode into `T`.
    pub fn decode(&self, payload: &[u8]) -> Result<T, CodecError> {
        self.codec.decode(payload)
    }
}

impl<T, C: fmt::Debug> fmt::Debug for QueueSpec<T, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueSpec")
            .field("name", &self.name)
            .field("codec", &self.codec)
            .finish()
    }
}
