//! Each event type's settings, as the consumer's pipeline reads them.

use std::collections::HashMap;

use tidings_core::IsolationLevel;

use super::{TypeOptions, UnknownType};
use crate::ConsumerOptions;

/// The settings of each handled type, and what unknown types get.
#[derive(Debug, Clone)]
pub(crate) struct Types {
    changes: HashMap<String, TypeOptions>,
    pub(super) unknown: UnknownType,
    /// Each type's options laid over the consumer's, by
    /// [`resolve`](Self::resolve).
    pub(super) resolved: HashMap<String, ConsumerOptions>,
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
