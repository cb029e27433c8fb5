//! The relay's give-up hook: run on each row before it is failed for
//! good, and committed first, so a row is failed only once its hook has
//! run (see [`give_up`](crate::give_up)).

use super::lane::Lane;
use crate::port::error_chain;
use crate::{Envelope, Outcome};

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
