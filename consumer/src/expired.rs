//! What the consumer does with a message whose expiry has come.

use std::time::SystemTime;

use tidings_core::Envelope;

use crate::metric;
use crate::parts::Parts;
use crate::process::{Pipeline, Verdict};
use crate::report::Count;

/// What the consumer does with a delivery whose
/// [`expires_at`](tidings_core::Envelope::expires_at) has passed when it
/// arrives ([`ConsumerOptions::expired`](crate::ConsumerOptions::expired)).
/// Either way the handler never runs, and the report counts it under
/// [`expired`](crate::ConsumerReport::expired).
///
/// ```
/// use tidings_consumer::{ConsumerOptions, Expired};
///
/// let options = ConsumerOptions::default().expired(Expired::Skip);
/// assert_eq!(options.get_expired(), Expired::Skip);
/// assert_eq!(ConsumerOptions::default().get_expired(), Expired::Park);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Expired {
    /// Dead-letter it with the reason `expired at <time>`, where an
    /// operator can see what came too late, and replay it if it should
    /// be handled after all. The default: nothing is lost silently.
    #[default]
    Park,
    /// Ack it and forget it, logged at `info` and counted under the
    /// `expired` outcome, for messages nobody needs once stale (a price
    /// quote, a presence ping).
    Skip,
}

impl<P: Parts> Pipeline<P> {
    /// The verdict on a delivery whose expiry has come, parked or
    /// skipped as the options say; `None` for one still current.
    pub(crate) fn expired(&self, envelope: &Envelope) -> Option<Verdict> {
        let at = envelope.expires_at?;
        if !envelope.is_expired(SystemTime::now()) {
            return None;
        }
        self.counters.bump(Count::Expired);
        let reason = format!("expired at {}", humantime::format_rfc3339_micros(at));
        Some(match self.options.expired {
            Expired::Park => Verdict::Park(reason),
            Expired::Skip => Verdict::Skip(metric::EXPIRED, reason),
        })
    }
}
