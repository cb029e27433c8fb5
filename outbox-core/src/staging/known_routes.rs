//! The routes a store knows to be recorded where it keeps every route
//! ever staged, so only the first staging of a route in a process writes
//! the record.
//!
//! A route staged in a transaction that rolls back is not recorded, so a
//! store learns a route only once its record is known to be committed:
//! when the write found it there already, or after a staging transaction
//! that wrote it committed.

use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};

/// Routes known to be recorded, shared by the clones of one store.
///
/// ```
/// use tidings_core::staging::KnownRoutes;
///
/// let known = KnownRoutes::default();
/// assert_eq!(known.unknown(["orders"].into_iter()), ["orders"]);
/// known.learn(["orders".to_owned()]);
/// assert!(known.unknown(["orders"].into_iter()).is_empty());
/// ```
#[derive(Debug, Default)]
pub struct KnownRoutes(Mutex<HashSet<String>>);

impl KnownRoutes {
    /// Those of `routes` not known to be recorded, each once, in name
    /// order, so two transactions recording the same new routes take their
    /// locks in one order and never wait on each other in a cycle.
    pub fn unknown<'a>(&self, routes: impl Iterator<Item = &'a str>) -> Vec<String> {
        let known = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let mut unknown: Vec<String> = Vec::new();
        for route in routes {
            if !known.contains(route) && !unknown.iter().any(|r| r == route) {
                unknown.push(route.to_owned());
            }
        }
        unknown.sort_unstable();
        unknown
    }

    /// Remembers `routes` as recorded.
    pub fn learn(&self, routes: impl IntoIterator<Item = String>) {
        let mut known = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        known.extend(routes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_learnt_route_is_no_longer_unknown() {
        let known = KnownRoutes::default();
        let staged = ["orders", "invoices", "orders"];
        assert_eq!(known.unknown(staged.into_iter()), ["invoices", "orders"]);
        known.learn(["orders".to_owned()]);
        assert_eq!(known.unknown(staged.into_iter()), ["invoices"]);
    }
}
