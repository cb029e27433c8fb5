//! An open transaction shared with user code: a handler, or a give-up
//! hook.

use std::sync::Arc;

use tokio::sync::{Mutex, MutexGuard};

/// An open transaction, shared with the user code that writes through it
/// (a consumer's handler, a [give-up hook](crate::give_up)). What it
/// writes commits with the inbox mark the transaction holds.
///
/// Lock it to use it; do not keep clones past the call's return, or the
/// transaction cannot be committed and the call counts as failed.
///
/// ```
/// use tidings_core::TxHandle;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let handle = TxHandle::new(vec![1]);
/// handle.lock().await.push(2);
/// assert_eq!(handle.into_inner(), Some(vec![1, 2]));
/// # }
/// ```
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
    /// Shares `tx`.
    pub fn new(tx: Tx) -> Self {
        Self {
            inner: Arc::new(Mutex::new(tx)),
        }
    }

    /// Locks the transaction for use.
    pub async fn lock(&self) -> MutexGuard<'_, Tx> {
        self.inner.lock().await
    }

    /// The transaction back, unless a clone is still alive.
    pub fn into_inner(self) -> Option<Tx> {
        Arc::try_unwrap(self.inner).ok().map(Mutex::into_inner)
    }
}
