//! A ledger of staged events and observed effects that tells what a run
//! lost, what it did twice and where a key's order broke.
//!
//! ```
//! use tidings_testing::ledger::Ledger;
//! use uuid::Uuid;
//!
//! let (a, b, c) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
//! let mut ledger = Ledger::new();
//! ledger.staged(a, Some("order-1"));
//! ledger.staged(b, Some("order-1"));
//! ledger.staged(c, None);
//! // Effects in the order the consumer committed them.
//! ledger.effect(b);
//! ledger.effect(a);
//! ledger.effect(a);
//! let report = ledger.report();
//! assert_eq!(report.lost, vec![c]);
//! assert_eq!(report.duplicated, vec![(a, 2)]);
//! assert_eq!(report.out_of_order.len(), 1, "a came after b");
//! assert!(!report.is_clean());
//! ```

use std::collections::HashMap;
use std::fmt;

use uuid::Uuid;

/// Where an event sits among its key's events.
#[derive(Debug, Clone)]
struct Staged {
    key: Option<String>,
    position: u64,
}

/// Staged events, in staging order, and effects, in the order they
/// happened.
#[derive(Debug, Clone, Default)]
pub struct Ledger {
    staged: HashMap<Uuid, Staged>,
    order: Vec<Uuid>,
    per_key: HashMap<String, u64>,
    effects: Vec<Uuid>,
}

/// An effect that came before an effect of an event staged earlier with
/// the same key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderViolation {
    /// The ordering key.
    pub key: String,
    /// The event whose effect came too late.
    pub late: Uuid,
    /// The event staged after it whose effect came first.
    pub overtaken_by: Uuid,
}

/// What a ledger found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LedgerReport {
    /// Events staged.
    pub staged: u64,
    /// Effects observed, copies included.
    pub effects: u64,
    /// Staged events without an effect, in staging order.
    pub lost: Vec<Uuid>,
    /// Events with more than one effect, and how many.
    pub duplicated: Vec<(Uuid, u32)>,
    /// Effects of one key out of staging order.
    pub out_of_order: Vec<OrderViolation>,
    /// Effects of events never staged.
    pub unknown: Vec<Uuid>,
}

impl Ledger {
    /// An empty ledger.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records an event staged (and committed), in staging order.
    pub fn staged(&mut self, event_id: Uuid, key: Option<&str>) {
        let position = key.map_or(0, |key| {
            let next = self.per_key.entry(key.to_owned()).or_default();
            *next += 1;
            *next
        });
        let key = key.map(str::to_owned);
        if self
            .staged
            .insert(event_id, Staged { key, position })
            .is_none()
        {
            self.order.push(event_id);
        }
    }

    /// Records an effect of `event_id`, in the order effects happened.
    pub fn effect(&mut self, event_id: Uuid) {
        self.effects.push(event_id);
    }

    /// What was lost, doubled, reordered or never staged.
    pub fn report(&self) -> LedgerReport {
        let mut counts: HashMap<Uuid, u32> = HashMap::new();
        let mut last: HashMap<&str, (u64, Uuid)> = HashMap::new();
        let mut report = LedgerReport {
            staged: self.order.len() as u64,
            effects: self.effects.len() as u64,
            ..LedgerReport::default()
        };
        for id in &self.effects {
            let count = counts.entry(*id).or_default();
            *count += 1;
            let Some(staged) = self.staged.get(id) else {
                if *count == 1 {
                    report.unknown.push(*id);
                }
                continue;
            };
            let (Some(key), 1) = (staged.key.as_deref(), *count) else {
                continue;
            };
            match last.get(key) {
                Some(&(position, overtaken_by)) if position > staged.position => {
                    report.out_of_order.push(OrderViolation {
                        key: key.to_owned(),
                        late: *id,
                        overtaken_by,
                    });
                }
                _ => {
                    last.insert(key, (staged.position, *id));
                }
            }
        }
        for id in &self.order {
            match counts.get(id) {
                None => report.lost.push(*id),
                Some(&n) if n > 1 => report.duplicated.push((*id, n)),
                Some(_) => {}
            }
        }
        report
    }
}

impl LedgerReport {
    /// Nothing lost, doubled, reordered or unknown.
    pub fn is_clean(&self) -> bool {
        self.lost.is_empty()
            && self.duplicated.is_empty()
            && self.out_of_order.is_empty()
            && self.unknown.is_empty()
    }
}

impl fmt::Display for LedgerReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} staged, {} effects: {} lost, {} duplicated, {} out of order, {} unknown",
            self.staged,
            self.effects,
            self.lost.len(),
            self.duplicated.len(),
            self.out_of_order.len(),
            self.unknown.len()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clean_run_is_clean() {
        let ids: Vec<Uuid> = (0..6).map(|_| Uuid::now_v7()).collect();
        let mut ledger = Ledger::new();
        for (i, id) in ids.iter().enumerate() {
            ledger.staged(*id, Some(if i % 2 == 0 { "a" } else { "b" }));
        }
        // Keys interleave differently, each in its own order.
        for i in [1, 0, 3, 2, 5, 4] {
            ledger.effect(ids[i]);
        }
        let report = ledger.report();
        assert!(report.is_clean(), "{report}");
        assert_eq!((report.staged, report.effects), (6, 6));
    }

    #[test]
    fn unknown_effects_are_reported_once() {
        let mut ledger = Ledger::new();
        let stray = Uuid::now_v7();
        ledger.effect(stray);
        ledger.effect(stray);
        assert_eq!(ledger.report().unknown, vec![stray]);
    }
}
