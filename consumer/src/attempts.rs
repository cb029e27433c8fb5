//! Poison parking: how often a message's handler started, counted by the
//! inbox where it can, by the broker otherwise.
//!
//! A broker counts a delivery each time a message leaves it, including the
//! prefetched ones a dying consumer process never handed to a handler. With
//! one message that crashes the process, every neighbour in the prefetch
//! window came back counted once more per crash, and parking on that count
//! took them to the dead-letter queue with it. So with an inbox, the
//! runner parks on the attempts the inbox counted where they happen (see
//! [`InboxAttempts`](tidings_core::InboxAttempts)): a message is parked
//! once its handler started more than `max_deliveries` times without
//! committing, whatever the broker says, and the broker's
//! count only parks past
//! [`BROKER_COUNT_BACKSTOP`](crate::ConsumerOptions::BROKER_COUNT_BACKSTOP)
//! times `max_deliveries`, as a backstop for a store that fails to count.
//!
//! A crash stops every handler running in the process, not only the
//! culprit's, and leaves each start counted as never returned; a
//! redelivery with such a start runs alone (see the isolation module), so
//! a neighbour is never charged for more than one crash it shared.
//!
//! A first delivery counts nothing up front, so the happy path costs no
//! extra write; its start is counted with its end if it fails. Only a first
//! delivery whose process dies is not counted, so a crashing message runs
//! at most `max_deliveries + 1` times before it is parked. Without an inbox
//! ([`NoInbox`](tidings_inbox::NoInbox)) nothing is counted, and the
//! broker's count is held against `max_deliveries` as before.

use tidings_core::port::error_chain;
use tidings_core::{Attempts, Envelope, InboxError};

use crate::ConsumerOptions;
use crate::isolation::Turn;
use crate::parts::{Parts, Tx};
use crate::process::{Counted, Pipeline};

impl<P: Parts> Pipeline<P> {
    /// Takes this delivery's turn and counts its attempt where it needs
    /// counting: a redelivery, or one whose count the broker does not know.
    /// A redelivery with an attempt that never returned is a suspect and
    /// waits to run alone (see the isolation module); its start is counted
    /// only once it does, so waiting while another suspect crashes the
    /// process is not held against it. An error is the reason to nack.
    pub(crate) async fn start_attempt(
        &self,
        envelope: &Envelope,
        count: Option<u32>,
    ) -> Result<(Counted, Turn<'_>), String> {
        if self.options.max_deliveries.is_none() {
            return Ok((Counted::Off, self.isolation.shared().await));
        }
        if count == Some(1) {
            return Ok((Counted::First, self.isolation.shared().await));
        }
        let failed = |e: InboxError| format!("counting the attempt failed: {}", error_chain(&e));
        let before = self
            .inbox
            .attempts(envelope.event_id)
            .await
            .map_err(failed)?;
        let turn = match before {
            Some(before) if before.unfinished() > 0 => {
                tracing::info!(
                    never_returned = before.unfinished(),
                    "a handler attempt on this message never returned; running it alone"
                );
                self.isolation.alone().await
            }
            _ => self.isolation.shared().await,
        };
        match self.inbox.start_attempt(envelope.event_id).await {
            Ok(Some(attempts)) => Ok((Counted::Inbox(attempts), turn)),
            Ok(None) => Ok((Counted::Broker, turn)),
            Err(e) => Err(failed(e)),
        }
    }

    /// Why the handler must not run again, if it must not.
    pub(crate) fn exhausted(&self, count: Option<u32>, counted: Counted) -> Option<String> {
        let max = self.options.max_deliveries?;
        let broker = count.unwrap_or(0);
        match counted {
            Counted::Off => None,
            Counted::First | Counted::Broker => (broker > max)
                .then(|| format!("delivered {broker} times, more than max_deliveries {max}")),
            Counted::Inbox(attempts) if attempts.started > max => {
                let before = Attempts {
                    started: attempts.started - 1,
                    finished: attempts.finished,
                };
                Some(format!(
                    "the handler started {} times without committing, max_deliveries {max}: \
                     {} never returned (the process crashed or was killed), {} failed",
                    before.started,
                    before.unfinished(),
                    before.finished
                ))
            }
            Counted::Inbox(_) => {
                let backstop = max.saturating_mul(ConsumerOptions::BROKER_COUNT_BACKSTOP);
                (broker > backstop).then(|| {
                    format!(
                        "delivered {broker} times, more than {} x max_deliveries {max}",
                        ConsumerOptions::BROKER_COUNT_BACKSTOP
                    )
                })
            }
        }
    }

    /// Deletes the count in the handler's transaction, so it goes when the
    /// handler's work commits; only a delivery whose start was counted has
    /// one to delete.
    pub(crate) async fn clear_attempts(
        &self,
        tx: &mut Tx<P>,
        envelope: &Envelope,
        counted: Counted,
    ) -> Result<(), tidings_core::InboxError> {
        match counted {
            Counted::Inbox(_) => self.inbox.clear_attempts(tx, envelope.event_id).await,
            _ => Ok(()),
        }
    }

    /// Counts an attempt that ended without a commit and goes back to the
    /// broker; a failure to count is logged, and leaves the attempt looking
    /// like a crash.
    pub(crate) async fn finish_attempt(&self, envelope: &Envelope, counted: Counted) {
        let start_counted = match counted {
            Counted::First => false,
            Counted::Inbox(_) => true,
            Counted::Off | Counted::Broker => return,
        };
        let finished = self
            .inbox
            .finish_attempt(envelope.event_id, start_counted)
            .await;
        if let Err(e) = finished {
            tracing::warn!(error = %error_chain(&e), "counting the failed attempt failed");
        }
    }
}
