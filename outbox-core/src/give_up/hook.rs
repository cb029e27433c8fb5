//! Running a give-up hook exactly once: in a transaction of an inbox store
//! that also marks the event under the give-up name, committed before the
//! caller parks the message or fails the row.

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;

use super::{GiveUp, GivenUp, GivenUpBy};
use crate::port::error_chain;
use crate::{
    BoxError, CausalContext, Cause, ConsumerName, Envelope, InboxError, InboxMark, InboxStore,
    Route, TxHandle,
};
use uuid::Uuid;

/// What a consumer's give-up marks are filed under, after its name: `:`
/// is no legal name character, so no consumer's own marks can meet them.
const CONSUMER_SUFFIX: &str = ":given-up";
/// What a relay's give-up marks are filed under, after its route's name.
const RELAY_SUFFIX: &str = ":relay-given-up";

impl ConsumerName {
    /// The name the consumer's give-up hook files its marks under: its
    /// own and `:given-up`, which no consumer's own marks can meet. The
    /// consumer's inbox cleaner purges these marks with its own.
    ///
    /// ```
    /// use tidings_core::ConsumerName;
    ///
    /// let billing = ConsumerName::new("billing").unwrap();
    /// assert_eq!(billing.given_up().as_str(), "billing:given-up");
    /// ```
    pub fn given_up(&self) -> ConsumerName {
        ConsumerName::derived(format!("{self}{CONSUMER_SUFFIX}"))
    }
}

/// Why a give-up hook did not commit. The caller retries the message, and
/// the hook with it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GiveUpError {
    /// The hook's transaction could not be opened, marked or committed.
    #[error("the give-up hook's transaction failed")]
    Store(#[source] InboxError),
    /// The hook returned an error.
    #[error("the give-up hook failed")]
    Hook(#[source] BoxError),
    /// The hook kept a clone of its transaction handle past its return.
    #[error("the give-up hook kept its transaction handle past its return")]
    KeptHandle,
}

/// A [`GiveUp`] hook bound to the inbox store whose transactions it runs
/// in and to the name its marks are filed under: runs the hook at most once
/// per event, and says whether it ran now or had run before. Cheap to
/// clone; the store's type is left behind, so consumers and relays hold
/// it whatever their inbox.
///
/// Consumers and relays build one when given a hook
/// (`Consumer::give_up`, [`Relay::give_up`](crate::relay::Relay::give_up));
/// build one yourself to attach a consumer's hook elsewhere
/// ([`Relay::give_up_hook`](crate::relay::Relay::give_up_hook)).
#[derive(Clone)]
pub struct GiveUpHook {
    inner: Arc<dyn RunGiveUp>,
}

impl GiveUpHook {
    /// `hook` for the consumer `consumer` of `queue`, in transactions of
    /// `store`, its marks filed under the consumer's name and
    /// `:given-up`.
    pub fn for_consumer<S, G>(store: S, consumer: &ConsumerName, queue: &str, hook: G) -> Self
    where
        S: InboxStore,
        G: GiveUp<S::Tx>,
    {
        let by = GivenUpBy::Consumer {
            consumer: consumer.to_string(),
            queue: queue.to_owned(),
        };
        Self::bind(store, consumer.given_up(), by, hook)
    }

    /// `hook` for the relay of `route` (a checked route), its marks filed
    /// under the route's name and `:relay-given-up`.
    pub(crate) fn for_route<S, G>(store: S, route: &Route, hook: G) -> Self
    where
        S: InboxStore,
        G: GiveUp<S::Tx>,
    {
        let by = GivenUpBy::Relay {
            route: route.name.to_string(),
        };
        let marker = ConsumerName::derived(format!("{}{RELAY_SUFFIX}", route.name));
        Self::bind(store, marker, by, hook)
    }

    fn bind<S, G>(store: S, marker: ConsumerName, by: GivenUpBy, hook: G) -> Self
    where
        S: InboxStore,
        G: GiveUp<S::Tx>,
    {
        let bound = Bound {
            store,
            marker,
            by,
            hook,
        };
        Self {
            inner: Arc::new(bound),
        }
    }

    /// Runs the hook on `envelope`, given up on for `reason` after
    /// `attempts`, unless it ran on it before: `true` when it ran and
    /// committed now, `false` when an earlier run had committed.
    ///
    /// # Errors
    ///
    /// A [`GiveUpError`] when the hook or its transaction failed; nothing
    /// of it committed, and the caller must not give up on the message yet.
    pub async fn run(
        &self,
        envelope: &Envelope,
        reason: &str,
        attempts: Option<u32>,
    ) -> Result<bool, GiveUpError> {
        self.inner.run(envelope, reason, attempts).await
    }

    /// Whether the hook ran on `event_id` before and committed, read by
    /// marking it in a transaction that is rolled back.
    ///
    /// # Errors
    ///
    /// [`GiveUpError::Store`] when the transaction could not be opened or
    /// marked.
    pub async fn ran_before(&self, event_id: Uuid) -> Result<bool, GiveUpError> {
        self.inner.ran_before(event_id).await
    }
}

impl fmt::Debug for GiveUpHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}

/// A hook with its store and the name its marks are filed under.
struct Bound<S, G> {
    store: S,
    marker: ConsumerName,
    by: GivenUpBy,
    hook: G,
}

impl<S: InboxStore, G: GiveUp<S::Tx>> Bound<S, G> {
    async fn run(
        &self,
        envelope: &Envelope,
        reason: &str,
        attempts: Option<u32>,
    ) -> Result<bool, GiveUpError> {
        let mut tx = self.store.begin().await.map_err(GiveUpError::Store)?;
        let key = self.marker.key(envelope.event_id);
        match self.store.mark(&mut tx, key).await {
            Ok(InboxMark::Fresh(())) => {}
            Ok(InboxMark::Duplicate) => {
                self.rollback(tx).await;
                tracing::info!(messaging.message.id = %envelope.event_id, "the give-up hook ran on this message before");
                return Ok(false);
            }
            Err(e) => {
                self.rollback(tx).await;
                return Err(GiveUpError::Store(e));
            }
        }
        // What the hook stages is caused by the message given up on.
        tx.set_cause(Some(Cause::of(envelope)));
        let given_up = GivenUp {
            envelope: envelope.clone(),
            reason: reason.to_owned(),
            attempts,
            by: self.by.clone(),
        };
        let handle = TxHandle::new(tx);
        let called = self.hook.give_up(given_up, handle.clone()).await;
        let Some(mut tx) = handle.into_inner() else {
            return Err(GiveUpError::KeptHandle);
        };
        tx.set_cause(None);
        if let Err(e) = called {
            self.rollback(tx).await;
            return Err(GiveUpError::Hook(e));
        }
        self.store.commit(tx).await.map_err(GiveUpError::Store)?;
        tracing::warn!(messaging.message.id = %envelope.event_id, %reason, "the give-up hook ran");
        Ok(true)
    }

    async fn ran_before(&self, event_id: Uuid) -> Result<bool, GiveUpError> {
        let mut tx = self.store.begin().await.map_err(GiveUpError::Store)?;
        let marked = self.store.mark(&mut tx, self.marker.key(event_id)).await;
        self.rollback(tx).await;
        match marked.map_err(GiveUpError::Store)? {
            InboxMark::Fresh(()) => Ok(false),
            InboxMark::Duplicate => Ok(true),
        }
    }

    async fn rollback(&self, tx: S::Tx) {
        if let Err(e) = self.store.rollback(tx).await {
            tracing::warn!(error = %error_chain(&e), "rolling back the give-up hook's transaction failed");
        }
    }
}

/// A bound hook with its store's and hook's types forgotten.
trait RunGiveUp: Send + Sync + 'static {
    fn run<'a>(
        &'a self,
        envelope: &'a Envelope,
        reason: &'a str,
        attempts: Option<u32>,
    ) -> BoxFuture<'a, Result<bool, GiveUpError>>;

    fn ran_before(&self, event_id: Uuid) -> BoxFuture<'_, Result<bool, GiveUpError>>;

    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result;
}

impl<S: InboxStore, G: GiveUp<S::Tx>> RunGiveUp for Bound<S, G> {
    fn run<'a>(
        &'a self,
        envelope: &'a Envelope,
        reason: &'a str,
        attempts: Option<u32>,
    ) -> BoxFuture<'a, Result<bool, GiveUpError>> {
        Box::pin(Bound::run(self, envelope, reason, attempts))
    }

    fn ran_before(&self, event_id: Uuid) -> BoxFuture<'_, Result<bool, GiveUpError>> {
        Box::pin(Bound::ran_before(self, event_id))
    }

    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GiveUpHook")
            .field("marker", &self.marker)
            .field("by", &self.by)
            .finish_non_exhaustive()
    }
}
