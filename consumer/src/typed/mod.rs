//! One consumer, several event types: a handler, a decoder and settings
//! for each type on one queue.

mod consumer;
mod options;
mod pipeline;
mod table;

use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::FutureExt;
use futures::future::{BoxFuture, ready};
use tidings_core::port::error_chain;
use tidings_core::{Codec, CodecError, JsonCodec, Message};
use tower::{Service, ServiceExt};

use crate::HandlerError;
use crate::handler::{Handler, HandlerRequest, TxHandle};

pub use options::{TypeOptions, UnknownType};
pub(crate) use table::Types;

/// The handlers of a consumer whose queue carries several event types:
/// each type gets its own handler, payload type, codec and
/// [`TypeOptions`]; a type with no handler is parked or skipped
/// ([`UnknownType`]). Build a consumer of it with
/// [`Consumer::for_types`](crate::Consumer::for_types).
///
/// Every message still goes through the consumer's layers (expiry, inbox
/// dedupe, poison parking, retries); only decoding and the handler are
/// chosen by the message's event type. A payload that does not decode
/// into its type is parked.
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use tidings_consumer::{EventHandlers, HandlerError, TxHandle, TypeOptions, handler_fn};
/// use tidings_core::memory::MemoryContext;
/// use tidings_core::{IsolationLevel, Message, RawCodec};
///
/// #[derive(Serialize, Deserialize)]
/// struct Placed { order: u64 }
///
/// async fn place(msg: Message<Placed>, tx: TxHandle<MemoryContext>) -> Result<(), HandlerError> {
///     tx.lock().await.insert("orders", msg.payload.order.to_string(), "placed");
///     Ok(())
/// }
///
/// async fn archive(msg: Message<bytes::Bytes>, tx: TxHandle<MemoryContext>) -> Result<(), HandlerError> {
///     tx.lock().await.insert("archive", msg.event_id().to_string(), msg.payload);
///     Ok(())
/// }
///
/// let handlers = EventHandlers::new()
///     .on("order.placed", handler_fn(place))
///     .on_with("order.archived", RawCodec, handler_fn(archive), TypeOptions::default()
///         .isolation(IsolationLevel::ReadCommitted));
/// assert_eq!(handlers.types().count(), 2);
/// ```
pub struct EventHandlers<Tx> {
    routes: HashMap<String, Route<Tx>>,
    unknown: UnknownType,
}

/// One type's handler and settings.
struct Route<Tx> {
    handler: Arc<dyn TypeHandler<Tx>>,
    options: TypeOptions,
}

impl<Tx> Clone for Route<Tx> {
    fn clone(&self) -> Self {
        Self {
            handler: self.handler.clone(),
            options: self.options,
        }
    }
}

impl<Tx: Send + 'static> EventHandlers<Tx> {
    /// No handlers yet; messages of any type are parked until some are
    /// added.
    pub fn new() -> Self {
        Self {
            routes: HashMap::new(),
            unknown: UnknownType::default(),
        }
    }

    /// Handles `event_type` with `handler`, decoding JSON payloads into
    /// `T` (with [`JsonCodec`], so `T` is `Serialize` and `Deserialize`),
    /// with the consumer's settings.
    ///
    /// # Panics
    ///
    /// When `event_type` has a handler already: a type is handled one way.
    pub fn on<T, H>(self, event_type: &str, handler: H) -> Self
    where
        T: Send + 'static,
        JsonCodec: Codec<T>,
        H: Handler<T, Tx>,
    {
        self.on_with(event_type, JsonCodec, handler, TypeOptions::default())
    }

    /// Handles `event_type` with `handler`, decoding payloads with
    /// `codec`, with `options` in place of the consumer's settings.
    ///
    /// # Panics
    ///
    /// When `event_type` has a handler already: a type is handled one way.
    pub fn on_with<T, C, H>(
        mut self,
        event_type: &str,
        codec: C,
        handler: H,
        options: TypeOptions,
    ) -> Self
    where
        T: Send + 'static,
        C: Codec<T> + Send + Sync + 'static,
        H: Handler<T, Tx>,
    {
        let handler: Arc<dyn TypeHandler<Tx>> = Arc::new(Typed {
            codec,
            handler,
            payload: PhantomData,
        });
        let route = Route { handler, options };
        if self.routes.insert(event_type.to_owned(), route).is_some() {
            panic!("event type {event_type:?} has two handlers; give each type one");
        }
        self
    }

    /// What to do with a message of a type no handler is for;
    /// [`UnknownType::Park`] by default.
    pub fn unknown(mut self, unknown: UnknownType) -> Self {
        self.unknown = unknown;
        self
    }

    /// What is done with a message of a type no handler is for.
    pub fn get_unknown(&self) -> UnknownType {
        self.unknown
    }

    /// The event types handled, in no particular order.
    pub fn types(&self) -> impl Iterator<Item = &str> {
        self.routes.keys().map(String::as_str)
    }

    /// The settings of each type, for the consumer's pipeline.
    pub(crate) fn settings(&self) -> Types {
        let options = self
            .routes
            .iter()
            .map(|(name, route)| (name.clone(), route.options))
            .collect();
        Types::new(options, self.unknown)
    }

    /// The handler the consumer runs: shares the routes, so cloning it
    /// per message costs one reference count.
    pub(crate) fn into_handler(self) -> TypeRouter<Tx> {
        TypeRouter {
            routes: Arc::new(self.routes),
        }
    }
}

impl<Tx: Send + 'static> Default for EventHandlers<Tx> {
    fn default() -> Self {
        Self::new()
    }
}

impl<Tx> std::fmt::Debug for EventHandlers<Tx> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventHandlers")
            .field("types", &self.routes.keys().collect::<Vec<_>>())
            .field("unknown", &self.unknown)
            .finish()
    }
}

/// The handler of a consumer built by
/// [`Consumer::for_types`](crate::Consumer::for_types): runs each message
/// through the handler of its event type.
pub struct TypeRouter<Tx> {
    routes: Arc<HashMap<String, Route<Tx>>>,
}

impl<Tx> Clone for TypeRouter<Tx> {
    fn clone(&self) -> Self {
        Self {
            routes: self.routes.clone(),
        }
    }
}

impl<Tx> std::fmt::Debug for TypeRouter<Tx> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TypeRouter")
            .field("types", &self.routes.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl<Tx: Send + 'static> Service<HandlerRequest<Undecoded, Tx>> for TypeRouter<Tx> {
    type Response = ();
    type Error = HandlerError;
    type Future = BoxFuture<'static, Result<(), HandlerError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), HandlerError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: HandlerRequest<Undecoded, Tx>) -> Self::Future {
        let event_type = request.message.event_type();
        match self.routes.get(event_type) {
            Some(route) => route.handler.call(request.message, request.tx),
            // The consumer parks or skips unknown types before this.
            None => {
                let reason = format!("no handler for event type {event_type:?}");
                ready(Err(HandlerError::permanent(reason))).boxed()
            }
        }
    }
}

/// The payload of a message whose decoding waits for its type's handler:
/// the bytes stay in the envelope.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Undecoded;

/// The queue codec of a consumer with per-type handlers: decodes nothing,
/// leaving each payload to the codec of its type.
#[derive(Debug, Clone, Copy, Default)]
pub struct PerTypeCodec;

impl Codec<Undecoded> for PerTypeCodec {
    fn content_type(&self) -> &'static str {
        "application/octet-stream"
    }

    fn encode(&self, _value: &Undecoded) -> Result<Bytes, CodecError> {
        Ok(Bytes::new())
    }

    fn decode(&self, _bytes: &[u8]) -> Result<Undecoded, CodecError> {
        Ok(Undecoded)
    }
}

/// One type's decoding and handler, behind one object type.
trait TypeHandler<Tx>: Send + Sync {
    fn call(
        &self,
        message: Message<Undecoded>,
        tx: TxHandle<Tx>,
    ) -> BoxFuture<'static, Result<(), HandlerError>>;
}

struct Typed<T, C, H> {
    codec: C,
    handler: H,
    payload: PhantomData<fn() -> T>,
}

impl<T, C, H, Tx> TypeHandler<Tx> for Typed<T, C, H>
where
    T: Send + 'static,
    C: Codec<T> + Send + Sync + 'static,
    H: Handler<T, Tx>,
    Tx: Send + 'static,
{
    fn call(
        &self,
        message: Message<Undecoded>,
        tx: TxHandle<Tx>,
    ) -> BoxFuture<'static, Result<(), HandlerError>> {
        let payload = match self.codec.decode(&message.envelope.payload) {
            Ok(payload) => payload,
            Err(e) => {
                let reason = format!("undecodable payload: {}", error_chain(&e));
                return ready(Err(HandlerError::permanent(reason))).boxed();
            }
        };
        let message = Message {
            payload,
            envelope: message.envelope,
            delivery_count: message.delivery_count,
        };
        self.handler
            .clone()
            .oneshot(HandlerRequest { message, tx })
            .boxed()
    }
}
