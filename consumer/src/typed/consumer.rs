//! Building a consumer of per-type handlers.

use std::borrow::Cow;

use tidings_core::{QueueSpec, Source, SpecError};

use super::{EventHandlers, PerTypeCodec, TypeRouter, Undecoded};
use crate::{Consumer, NoInbox};

impl<S: Source, Tx: Send + 'static> Consumer<S, Undecoded, PerTypeCodec, TypeRouter<Tx>, NoInbox> {
    /// A consumer of `queue`, whose messages carry several event types,
    /// each run through its own handler in `handlers`; add an inbox with
    /// [`inbox`](Self::inbox).
    ///
    /// # Errors
    ///
    /// [`SpecError::EmptyName`], [`SpecError::NameTooLong`] or
    /// [`SpecError::IllegalName`] when `queue` is not a legal name.
    ///
    /// ```
    /// use serde::{Deserialize, Serialize};
    /// use tidings_consumer::{Consumer, EventHandlers, HandlerError, TxHandle, UnknownType, handler_fn};
    /// use tidings_core::Message;
    /// use tidings_core::memory::{MemoryBroker, MemoryContext, MemoryStore};
    /// use tidings_inbox::Inbox;
    ///
    /// #[derive(Serialize, Deserialize)]
    /// struct Placed { order: u64 }
    /// #[derive(Serialize, Deserialize)]
    /// struct Cancelled { order: u64, reason: String }
    ///
    /// async fn place(msg: Message<Placed>, tx: TxHandle<MemoryContext>) -> Result<(), HandlerError> {
    ///     tx.lock().await.insert("orders", msg.payload.order.to_string(), "placed");
    ///     Ok(())
    /// }
    ///
    /// async fn cancel(msg: Message<Cancelled>, tx: TxHandle<MemoryContext>) -> Result<(), HandlerError> {
    ///     tx.lock().await.insert("orders", msg.payload.order.to_string(), msg.payload.reason);
    ///     Ok(())
    /// }
    ///
    /// # fn main() -> Result<(), tidings_core::SpecError> {
    /// let broker = MemoryBroker::new();
    /// broker.declare_queue("orders");
    /// let handlers = EventHandlers::new()
    ///     .on("order.placed", handler_fn(place))
    ///     .on("order.cancelled", handler_fn(cancel))
    ///     .unknown(UnknownType::Skip);
    /// let orders = Consumer::for_types(broker, "orders", handlers)?
    ///     .inbox(Inbox::new(MemoryStore::new(), "orders")?);
    /// // LifecyclePlan::new().step("orders", orders)
    /// # Ok(())
    /// # }
    /// ```
    pub fn for_types(
        source: S,
        queue: impl Into<Cow<'static, str>>,
        handlers: EventHandlers<Tx>,
    ) -> Result<Self, SpecError> {
        let types = handlers.settings();
        let queue = QueueSpec::with_codec_named(queue, PerTypeCodec);
        let mut consumer = Self::new(source, queue, handlers.into_handler())?;
        consumer.types = Some(types);
        Ok(consumer)
    }
}
