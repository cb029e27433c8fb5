//! Handlers: any `tower::Service` over [`HandlerRequest`], or a plain
//! `async fn` adapted by [`handler_fn`].

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll};

use tidings_core::Message;
use tokio::sync::{Mutex, MutexGuard};
use tower::Service;

use crate::HandlerError;

/// The inbox's open transaction, shared with the handler. The handler's
/// writes through it commit with the inbox mark.
///
/// Lock it to use it; do not keep clones past the handler's return, or the
/// runner cannot commit and treats the message as failed.
#[derive(Debug)]
pub struct TxHandle<Tx> {
    inner: Arc<Mutex<Tx>>,
}

impl<Tx> Clone for TxHandle<Tx> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<Tx> TxHandle<Tx> {
    pub(crate) fn new(tx: Tx) -> Self {
        Self {
            inner: Arc::new(Mutex::new(tx)),
        }
    }

    /// Locks the transaction for use.
    pub async fn lock(&self) -> MutexGuard<'_, Tx> {
        self.inner.lock().await
    }

    /// The transaction back, unless a clone is still alive.
    pub(crate) fn into_inner(self) -> Option<Tx> {
        Arc::try_unwrap(self.inner).ok().map(Mutex::into_inner)
    }
}

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
