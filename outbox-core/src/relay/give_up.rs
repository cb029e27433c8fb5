//! The relay's give-up hook: run on each row before it is failed for
//! good, and committed first, so a row is failed only once its hook has
//! run (see [`give_up`](crate::give_up)).

use std::sync::Arc;

use super::lane::Lane;
use super::{Relay, Relays};
use crate::give_up::{GiveUp, GiveUpHook};
use crate::port::error_chain;
use crate::{Envelope, InboxStore, OutboxStore, Outcome, Publisher};

impl<S: OutboxStore, P: Publisher> Relay<S, P> {
    /// Runs `hook` on each row before it is failed for good (retries
    /// exhausted, expired, a crash loop, refused by the broker), exactly
    /// once per row, in a transaction of `inbox` that also files an inbox
    /// mark under the route's name and `:relay-given-up`. The transaction
    /// commits before the row is failed; while the hook fails, the row
    /// stays pending with the route's backoff and the hook runs again on
    /// its next claim. See [`give_up`](crate::give_up).
    ///
    /// The hook's transaction is one of its own: on PostgreSQL with locked
    /// claims it takes a second connection from the pool while the claim
    /// holds its own, so give the pool room for both.
    ///
    /// ```
    /// use tidings_core::give_up::{GivenUp, give_up_fn};
    /// use tidings_core::memory::{MemoryBroker, MemoryContext, MemoryStore};
    /// use tidings_core::relay::Relay;
    /// use tidings_core::{BoxError, OutboxSpec, TxHandle};
    ///
    /// static EVENTS: OutboxSpec<u64> = OutboxSpec::json("order-events").destination("orders");
    ///
    /// async fn alert(given_up: GivenUp, tx: TxHandle<MemoryContext>) -> Result<(), BoxError> {
    ///     let id = given_up.envelope.event_id.to_string();
    ///     tx.lock().await.insert("undelivered", id, given_up.reason);
    ///     Ok(())
    /// }
    ///
    /// # fn main() -> Result<(), tidings_core::SpecError> {
    /// let store = MemoryStore::new();
    /// let relay = Relay::new(store.clone(), MemoryBroker::new(), &EVENTS)?
    ///     .give_up(store, give_up_fn(alert));
    /// # Ok(())
    /// # }
    /// ```
    pub fn give_up<I, G>(self, inbox: I, hook: G) -> Self
    where
        I: InboxStore,
        G: GiveUp<I::Tx>,
    {
        let hook = GiveUpHook::for_route(inbox, &self.lane.route, hook);
        self.give_up_hook(hook)
    }

    /// Runs a bound give-up hook on each row before it is failed for good,
    /// as [`give_up`](Self::give_up) does; for a consumer's hook on the
    /// stored inbox it handles from.
    pub fn give_up_hook(mut self, hook: GiveUpHook) -> Self {
        let mut lane = Lane::new(self.lane.route.clone(), self.lane.tenant.clone());
        lane.give_up = Some(hook);
        self.lane = Arc::new(lane);
        self
    }
}

impl<S: OutboxStore, P: Publisher + Clone> Relays<S, P> {
    /// Runs `hook` before any route's row is failed for good, as
    /// [`Relay::give_up`] does for one route: each route's marks are
    /// filed under its own name, and every relay made, those of routes
    /// added before this as well as after, runs it.
    ///
    /// ```
    /// use tidings_core::give_up::{GivenUp, give_up_fn};
    /// use tidings_core::memory::{MemoryBroker, MemoryContext, MemoryStore};
    /// use tidings_core::{BoxError, OutboxSpec, TxHandle};
    ///
    /// static EVENTS: OutboxSpec<u64> = OutboxSpec::json("order-events").destination("orders");
    ///
    /// async fn alert(given_up: GivenUp, tx: TxHandle<MemoryContext>) -> Result<(), BoxError> {
    ///     let id = given_up.envelope.event_id.to_string();
    ///     tx.lock().await.insert("undelivered", id, given_up.reason);
    ///     Ok(())
    /// }
    ///
    /// # fn main() -> Result<(), tidings_core::SpecError> {
    /// let store = MemoryStore::new();
    /// let relays = store
    ///     .relays(MemoryBroker::new())
    ///     .route(&EVENTS)?
    ///     .give_up(store.clone(), give_up_fn(alert));
    /// # let _ = relays;
    /// # Ok(())
    /// # }
    /// ```
    pub fn give_up<I, G>(mut self, inbox: I, hook: G) -> Self
    where
        I: InboxStore,
        G: GiveUp<I::Tx>,
    {
        let bind =
            move |route: &crate::Route| GiveUpHook::for_route(inbox.clone(), route, hook.clone());
        self.give_up = Some(Arc::new(bind));
        self
    }
}

impl Lane {
    /// The outcome of the row of `envelope`, on its `attempts`th claim,
    /// once the give-up hook has had its say: a failure stands once the
    /// hook ran (now or before); while it fails, the row is retried after
    /// the route's backoff, and the hook with it.
    pub(super) async fn give_up_first(
        &self,
        envelope: &Envelope,
        attempts: u32,
        outcome: Outcome,
    ) -> Outcome {
        let (Some(hook), Outcome::Failed { reason }) = (&self.give_up, &outcome) else {
            return outcome;
        };
        let id = envelope.event_id;
        match hook.run(envelope, reason, Some(attempts)).await {
            Ok(_) => outcome,
            Err(e) => {
                let chain = error_chain(&e);
                let delay = self.route.retry.get_backoff().delay(attempts);
                tracing::error!(messaging.message.id = %id, error = %chain, %reason, retry_in = ?delay, "the give-up hook failed; the row stays pending and the hook runs again");
                Outcome::Retry {
                    delay,
                    error: format!("not failed yet, the give-up hook failed: {chain}"),
                }
            }
        }
    }
}
