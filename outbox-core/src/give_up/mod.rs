//! Give-up hooks: user code that runs, exactly once, when tidings gives up
//! on a message or an outbox row, in a transaction of its own, so that a
//! compensation (a refund, a release, an event saying what went wrong)
//! commits with a record that it ran.
//!
//! tidings gives up on something in three places: a consumer parks a
//! delivery (dead-letters it), a stored inbox fails a message for good,
//! and a relay fails an outbox row for good (retries exhausted, expired,
//! a crash loop, refused by the broker). A [`GiveUp`] hook attached there
//! receives a [`GivenUp`] (what, why, after how many attempts) and an open
//! transaction of an inbox store, as a handler does; what it writes, and
//! the events it stages through the transaction's outbox, commit with an
//! inbox mark filed under the consumer's (or route's) give-up name and the
//! event's id.
//!
//! That transaction commits **before** the message is parked or the row
//! failed. If the process dies between the two, the message comes back,
//! fails again, and the mark says the hook already ran: it is parked
//! without running the hook again. If the hook fails, or its commit does,
//! nothing is parked or failed yet: the message is retried (nacked, or its
//! row rescheduled with backoff) and the hook with it, so a hook is never
//! skipped.
//!
//! ```
//! use tidings_core::give_up::{GivenUp, give_up_fn};
//! use tidings_core::memory::MemoryContext;
//! use tidings_core::{BoxError, TxHandle};
//!
//! async fn refund(given_up: GivenUp, tx: TxHandle<MemoryContext>) -> Result<(), BoxError> {
//!     let id = given_up.envelope.event_id.to_string();
//!     tx.lock().await.insert("refunds", id, given_up.reason.clone());
//!     Ok(())
//! }
//!
//! let hook = give_up_fn(refund);
//! # let _ = hook;
//! ```

mod hook;
#[cfg(test)]
mod tests;

use std::future::Future;

pub use hook::{GiveUpError, GiveUpHook};

use crate::{BoxError, Envelope, TxHandle};

/// What was given up on, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GivenUp {
    /// The message: its event id, type, route, destination, payload and
    /// headers.
    pub envelope: Envelope,
    /// Why it was given up on, as the dead-letter reason or the failed
    /// row's reason says.
    pub reason: String,
    /// Its attempts so far where known: the deliveries a consumer saw, the
    /// claims of a stored message or an outbox row.
    pub attempts: Option<u32>,
    /// Who gave up on it.
    pub by: GivenUpBy,
}

/// Who gave up on a message.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GivenUpBy {
    /// A consumer parked it, or its stored inbox failed it for good.
    Consumer {
        /// The consumer's name.
        consumer: String,
        /// The queue it consumes.
        queue: String,
    },
    /// A relay failed its outbox row for good.
    Relay {
        /// The outbox route.
        route: String,
    },
}

/// A give-up hook: runs once for each message given up on, in `tx`, an
/// open transaction of an inbox store, which commits after it returns
/// `Ok`. Made from an `async fn` by [`give_up_fn`]; see the
/// [module docs](self).
///
/// A hook that fails is called again later (the message is retried), so
/// it must not leave effects outside `tx` that cannot bear a repeat.
pub trait GiveUp<Tx>: Clone + Send + Sync + 'static {
    /// Compensates for `given_up` within `tx`.
    ///
    /// # Errors
    ///
    /// Any error: nothing of `tx` commits, the message is not parked (or
    /// the row not failed) yet, and the hook runs again when the message
    /// comes back.
    fn give_up(
        &self,
        given_up: GivenUp,
        tx: TxHandle<Tx>,
    ) -> impl Future<Output = Result<(), BoxError>> + Send;
}

/// Adapts `async fn(GivenUp, TxHandle<Tx>) -> Result<(), BoxError>` into a
/// [`GiveUp`] hook.
///
/// ```
/// use tidings_core::give_up::{GivenUp, give_up_fn};
/// use tidings_core::memory::MemoryContext;
/// use tidings_core::{BoxError, TxHandle};
///
/// let hook = give_up_fn(|given_up: GivenUp, tx: TxHandle<MemoryContext>| async move {
///     tracing::warn!(reason = %given_up.reason, "compensating");
///     tx.lock().await.insert("compensations", given_up.envelope.event_id.to_string(), "done");
///     Ok::<_, BoxError>(())
/// });
/// # let _ = hook;
/// ```
pub fn give_up_fn<F>(f: F) -> GiveUpFn<F> {
    GiveUpFn { f }
}

/// The hook [`give_up_fn`] builds.
#[derive(Debug, Clone, Copy)]
pub struct GiveUpFn<F> {
    f: F,
}

impl<F, Fut, Tx> GiveUp<Tx> for GiveUpFn<F>
where
    F: Fn(GivenUp, TxHandle<Tx>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<(), BoxError>> + Send,
{
    fn give_up(
        &self,
        given_up: GivenUp,
        tx: TxHandle<Tx>,
    ) -> impl Future<Output = Result<(), BoxError>> + Send {
        (self.f)(given_up, tx)
    }
}
