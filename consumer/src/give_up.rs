//! The consumer's give-up hook: run on each delivery before it is parked,
//! and committed first, so a message is dead-lettered only once its hook
//! has run (see [`tidings_core::give_up`]).
//!
//! The hook runs in a transaction of the consumer's inbox store that marks
//! the event under the consumer's name and `:given-up`. A delivery parked
//! again after a crash between that commit and the dead-lettering finds
//! the mark and is parked without running its handler or the hook again
//! (a redelivery, that is: a message sent or requeued anew is handled
//! anew). While the hook fails, the delivery is nacked rather than parked:
//! it comes back, is judged again (a message past its deliveries is parked
//! without running its handler), and the hook runs again.

use tidings_core::give_up::{GiveUp, GiveUpHook};
use tidings_core::port::error_chain;
use tidings_core::{Envelope, InboxStore};

use crate::Consumer;
use crate::parts::Parts;
use crate::process::{Pipeline, Verdict};

impl<S, T, C, H, I: InboxStore> Consumer<S, T, C, H, I> {
    /// Runs `hook` on each message before it is parked (dead-lettered, or
    /// through a [stored inbox](crate::StoredInbox) failed for good),
    /// exactly once per message, in a transaction of the inbox's store that
    /// also files an inbox mark under the consumer's name and `:given-up`;
    /// what the hook writes and stages commits with it. That transaction
    /// commits before the message is parked, so a crash in between only
    /// brings the message back, to be parked without running its handler
    /// or the hook again. While the hook fails, the message is nacked instead of
    /// parked, and the hook runs again when it comes back; the failure is
    /// logged at `error`. See [`tidings_core::give_up`].
    ///
    /// Without an inbox ([`NoInbox`](crate::NoInbox)) nothing is marked: the hook runs at
    /// least once, and again for a message parked again.
    ///
    /// ```
    /// use tidings_consumer::{Consumer, HandlerError, TxHandle, handler_fn};
    /// use tidings_core::give_up::{GivenUp, give_up_fn};
    /// use tidings_core::memory::{MemoryBroker, MemoryContext, MemoryStore};
    /// use tidings_core::{BoxError, Message, QueueSpec};
    /// use tidings_inbox::Inbox;
    ///
    /// static ORDERS: QueueSpec<u64> = QueueSpec::json("orders");
    ///
    /// async fn bill(msg: Message<u64>, tx: TxHandle<MemoryContext>) -> Result<(), HandlerError> {
    ///     Err(HandlerError::permanent("card declined"))
    /// }
    ///
    /// async fn cancel_order(given_up: GivenUp, tx: TxHandle<MemoryContext>) -> Result<(), BoxError> {
    ///     let id = given_up.envelope.event_id.to_string();
    ///     tx.lock().await.insert("cancelled", id, given_up.reason);
    ///     Ok(())
    /// }
    ///
    /// let store = MemoryStore::new();
    /// let consumer = Consumer::new(MemoryBroker::new(), &ORDERS, handler_fn(bill))
    ///     .unwrap()
    ///     .inbox(Inbox::new(store, "billing").unwrap())
    ///     .give_up(give_up_fn(cancel_order));
    /// ```
    pub fn give_up<G: GiveUp<I::Tx>>(mut self, hook: G) -> Self {
        let (_, queue, inbox, _) = self.parts();
        let (store, consumer) = (inbox.store().clone(), inbox.consumer_name());
        let hook = GiveUpHook::for_consumer(store, consumer, queue.name(), hook);
        self.give_up = Some(hook);
        self
    }

    /// The consumer's give-up hook, if it has one.
    pub(crate) fn give_up_hook(&self) -> Option<&GiveUpHook> {
        self.give_up.as_ref()
    }
}

impl<P: Parts> Pipeline<P> {
    /// The verdict on `envelope`, delivered `count` times: parked at once
    /// when it is a redelivery of a message whose hook ran already, so a
    /// message given up on is not handled after all; judged otherwise. A
    /// first delivery pays nothing.
    pub(crate) async fn judge_unless_given_up(
        &self,
        envelope: &Envelope,
        count: Option<u32>,
    ) -> Verdict {
        let Some(hook) = self.give_up.as_ref().filter(|_| count != Some(1)) else {
            return self.judge(envelope, count).await;
        };
        match hook.ran_before(envelope.event_id).await {
            Ok(true) => return Verdict::Park("given up on before: its give-up hook ran".into()),
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(error = %error_chain(&e), "reading whether this message was given up on failed; judging it");
            }
        }
        self.judge(envelope, count).await
    }

    /// The verdict on `envelope`, delivered `count` times, once the
    /// give-up hook has had its say: a park stands once the hook ran (now
    /// or before); while it fails, the delivery is retried.
    pub(crate) async fn give_up_first(
        &self,
        verdict: Verdict,
        envelope: &Envelope,
        count: Option<u32>,
    ) -> Verdict {
        let (Some(hook), Verdict::Park(reason)) = (&self.give_up, &verdict) else {
            return verdict;
        };
        match hook.run(envelope, reason, count).await {
            Ok(_) => verdict,
            Err(e) => {
                let chain = error_chain(&e);
                tracing::error!(error = %chain, %reason, "the give-up hook failed; retrying the delivery instead of parking it");
                Verdict::Retry(format!("not parked yet, the give-up hook failed: {chain}"))
            }
        }
    }
}
