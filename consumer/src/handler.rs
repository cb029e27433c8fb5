//! Handlers: any `tower::Service` over [`HandlerRequest`], or a plain
//! `async fn` adapted by [`handler_fn`].

use std::future::Future;
use std::task::{Context, Poll};

use tidings_core::Message;
pub use tidings_core::TxHandle;
use tower::Service;

use crate::HandlerError;

/// What a handler receives: the decoded message and the open transaction.
#[derive(Debug)]
pub struct HandlerRequest<T, Tx> {
    /// The decoded message.
    pub message: Message<T>,
    /// The inbox's open transaction.
    pub tx: TxHandle<Tx>,
}

/// A handler the runner can drive: a cloneable `tower::Service` over
/// [`HandlerRequest`] whose future is `Send`. Implemented for every such
/// service, user layers included.
pub trait Handler<T, Tx>:
    Service<HandlerRequest<T, Tx>, Response = (), Error = HandlerError, Future: Send>
    + Clone
    + Send
    + Sync
    + 'static
{
}

impl<S, T, Tx> Handler<T, Tx> for S where
    S: Service<HandlerRequest<T, Tx>, Response = (), Error = HandlerError, Future: Send>
        + Clone
        + Send
        + Sync
        + 'static
{
}

/// Adapts `async fn(Message<T>, TxHandle<Tx>) -> Result<(), HandlerError>`
/// into a handler.
///
/// ```
/// use tidings_consumer::{HandlerError, TxHandle, handler_fn};
/// use tidings_core::Message;
/// use tidings_core::memory::MemoryContext;
///
/// async fn bill(msg: Message<u64>, tx: TxHandle<MemoryContext>) -> Result<(), HandlerError> {
///     tx.lock().await.insert("invoices", msg.payload.to_string(), "billed");
///     Ok(())
/// }
/// let handler = handler_fn(bill);
/// ```
pub fn handler_fn<F>(f: F) -> HandlerFn<F> {
    HandlerFn { f }
}

/// The handler [`handler_fn`] builds.
#[derive(Debug, Clone, Copy)]
pub struct HandlerFn<F> {
    f: F,
}

impl<F, Fut, T, Tx> Service<HandlerRequest<T, Tx>> for HandlerFn<F>
where
    F: FnMut(Message<T>, TxHandle<Tx>) -> Fut,
    Fut: Future<Output = Result<(), HandlerError>>,
{
    type Response = ();
    type Error = HandlerError;
    type Future = Fut;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), HandlerError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: HandlerRequest<T, Tx>) -> Fut {
        (self.f)(request.message, request.tx)
    }
}
