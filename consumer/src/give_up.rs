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

use tidings_core::port::error_chain;
use tidings_core::{Codec, Envelope, InboxAttempts};

use crate::handler::Handler;
use crate::process::{Pipeline, Verdict};

impl<T, C, H, I> Pipeline<T, C, H, I>
where
    T: Send + 'static,
    C: Codec<T> + 'static,
    I: InboxAttempts,
    H: Handler<T, I::Tx>,
{
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
