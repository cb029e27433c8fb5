//! Each event type's settings, as the consumer's pipeline reads them.

use std::collections::HashMap;

use tidings_core::{Envelope, IsolationLevel};

use super::{TypeOptions, UnknownType};
use crate::ConsumerOptions;
use crate::metric;
use crate::parts::Parts;
use crate::process::{Pipeline, Verdict};
use crate::report::Count;

/// The settings of each handled type, and what unknown types get.
#[derive(Debug, Clone)]
pub(crate) struct Types {
    changes: HashMap<String, TypeOptions>,
    unknown: UnknownType,
    /// Each type's options laid over the consumer's, by
    /// [`resolve`](Self::resolve).
    resolved: HashMap<String, ConsumerOptions>,
}

impl Types {
    pub(crate) fn new(changes: HashMap<String, TypeOptions>, unknown: UnknownType) -> Self {
        Self {
            changes,
            unknown,
            resolved: HashMap::new(),
        }
    }

    /// These types with every type's options laid over `options`.
    pub(crate) fn resolve(&self, options: ConsumerOptions) -> Self {
        let resolved = self
            .changes
            .iter()
            .map(|(name, changes)| (name.clone(), changes.apply(options)))
            .collect();
        Self {
            resolved,
            ..self.clone()
        }
    }

    /// Every isolation level a type asks for.
    pub(crate) fn isolation_levels(&self) -> impl Iterator<Item = IsolationLevel> + '_ {
        self.changes.values().filter_map(TypeOptions::get_isolation)
    }

    /// Each type's options laid over `options`.
    pub(crate) fn each(
        &self,
        options: ConsumerOptions,
    ) -> impl Iterator<Item = ConsumerOptions> + '_ {
        self.changes
            .values()
            .map(move |changes| changes.apply(options))
    }
}

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
