//! How the consumer's pipeline treats a delivery by its event type: the
//! options it is handled with, and the verdict on a type no handler is for.

use tidings_core::Envelope;

use super::UnknownType;
use crate::ConsumerOptions;
use crate::metric;
use crate::parts::Parts;
use crate::process::{Pipeline, Verdict};
use crate::report::Count;

impl<P: Parts> Pipeline<P> {
    /// The options `envelope` is handled with: its type's where the
    /// consumer has per-type handlers, the consumer's otherwise.
    pub(crate) fn options_for(&self, envelope: &Envelope) -> &ConsumerOptions {
        self.types
            .as_ref()
            .and_then(|types| types.resolved.get(&envelope.event_type))
            .unwrap_or(&self.options)
    }

    /// Whether `envelope` is of a type no handler is for.
    pub(crate) fn unknown_type_of(&self, envelope: &Envelope) -> bool {
        self.types
            .as_ref()
            .is_some_and(|types| !types.resolved.contains_key(&envelope.event_type))
    }

    /// The verdict on a delivery of a type no handler is for, parked or
    /// skipped as the handlers say; `None` for a handled type or a
    /// consumer with one handler.
    pub(crate) fn unknown_type(&self, envelope: &Envelope) -> Option<Verdict> {
        let types = self.types.as_ref()?;
        if !self.unknown_type_of(envelope) {
            return None;
        }
        self.counters.bump(Count::Unknown);
        let reason = format!("no handler for event type {:?}", envelope.event_type);
        Some(match types.unknown {
            UnknownType::Park => Verdict::Park(reason),
            UnknownType::Skip => Verdict::Skip(metric::SKIPPED, reason),
        })
    }
}
