//! Which rows a claim takes: the state machine's selection rules.

use std::collections::HashSet;
use std::time::SystemTime;

use super::rows::{RouteRows, Row, Status};
use crate::{OrderingMode, Route};

/// Sequence numbers of the rows a claim takes, in claim order, starting
/// past sequence number `after` where given.
pub(super) fn select(
    rows: &RouteRows,
    route: &Route,
    limit: usize,
    now: SystemTime,
    after: Option<u64>,
) -> Vec<u64> {
    let start = after.map_or(0, |after| after.saturating_add(1));
    let mut order: Vec<(u64, &Row)> = rows.rows.range(start..).map(|(s, r)| (*s, r)).collect();
    if route.hlc_ordering {
        order.sort_by_key(|(seq, row)| (row.envelope.hlc.map_or(u64::MAX, |h| h.as_u64()), *seq));
    }
    let per_key = route.ordering == OrderingMode::PerKey;
    let mut keys_seen: HashSet<&str> = HashSet::new();
    let mut chosen = Vec::new();
    for (seq, row) in order {
        if chosen.len() >= limit {
            break;
        }
        let unfinished = matches!(row.status, Status::Pending | Status::InFlight { .. });
        if per_key && unfinished {
            if let Some(key) = row.envelope.ordering_key.as_deref() {
                // Only the oldest unfinished row of a key may go, and only
                // when it is claimable itself.
                if !keys_seen.insert(key) {
                    continue;
                }
            }
        }
        if row.status == Status::Pending && row.available_at <= now {
            chosen.push(seq);
        }
    }
    chosen
}
