//! The types a consumer's pipeline is built from, named together.

use std::marker::PhantomData;

use tidings_core::{Codec, InboxAttempts, InboxStore};

use crate::handler::Handler;

/// The payload, codec, inbox store and handler a pipeline runs, with the
/// bounds that make them fit together: the pipeline and everything that
/// drives it take one type parameter bounded by this, in place of four
/// with their bounds spelled out each time.
pub(crate) trait Parts: 'static {
    /// The decoded payload.
    type Payload: Send + 'static;
    /// Decodes the payload.
    type Codec: Codec<Self::Payload> + 'static;
    /// The inbox store whose transaction the handler receives.
    type Inbox: InboxAttempts;
    /// The user's handler.
    type Handler: Handler<Self::Payload, <Self::Inbox as InboxStore>::Tx>;
}

/// The transaction a pipeline's handler writes through.
pub(crate) type Tx<P> = <<P as Parts>::Inbox as InboxStore>::Tx;

/// The [`Parts`] of a consumer of `T` payloads decoded by `C`, handled by
/// `H` in transactions of the inbox store `I`.
pub(crate) struct PartsOf<T, C, H, I>(PhantomData<fn(T, C, H, I)>);

impl<T, C, H, I> Parts for PartsOf<T, C, H, I>
where
    T: Send + 'static,
    C: Codec<T> + 'static,
    I: InboxAttempts,
    H: Handler<T, I::Tx>,
{
    type Payload = T;
    type Codec = C;
    type Inbox = I;
    type Handler = H;
}
