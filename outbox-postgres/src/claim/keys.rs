//! The key cursors of per-key claims: where each route's next walk over
//! its ordering keys starts (`claimable_per_key.sql`).
//!
//! A per-key claim walks the keys with unfinished rows in key order, from
//! the key after the cursor past the last key and round from the first,
//! and stops once it holds as many rows as it may take. Were every walk to
//! start at the first key, a route with more busy keys than a claim takes
//! would serve its first keys for ever; so a full claim moves the cursor
//! to the last key it took, and a short one, which went all the way round,
//! moves it back to the start. The cursor only spreads the claims over
//! the keys: order within a key comes from the walk itself, whatever the
//! cursor says, so relays in other processes, with cursors of their own,
//! take nothing out of turn.

use std::collections::HashMap;
use std::sync::Mutex;

use tidings_core::OutboxRecord;

/// Each route's key cursor, shared by the clones of a store.
#[derive(Debug, Default)]
pub(crate) struct KeyCursors {
    by_route: Mutex<HashMap<String, String>>,
}

impl KeyCursors {
    /// The key after which `route`'s next walk starts: the empty string,
    /// before every key, at first and after a short claim.
    pub(crate) fn start(&self, route: &str) -> String {
        let cursors = self.by_route.lock().unwrap_or_else(|e| e.into_inner());
        cursors.get(route).cloned().unwrap_or_default()
    }

    /// Moves `route`'s cursor after a claim of at most `limit` that walked
    /// the keys past `from` and took `records`.
    pub(crate) fn advance(&self, route: &str, from: &str, records: &[OutboxRecord], limit: usize) {
        let keys = records.iter().map(|r| r.envelope.ordering_key.as_deref());
        let next = next_start(from, keys, limit);
        let mut cursors = self.by_route.lock().unwrap_or_else(|e| e.into_inner());
        match next {
            Some(key) => cursors.insert(route.to_owned(), key),
            None => cursors.remove(route),
        };
    }
}

/// Where the walk after a claim of at most `limit` that started past key
/// `from` and took rows with ordering keys `keys` starts: past the last
/// key of a full claim, from the first (`None`) after a short one. The
/// walk took the keys past `from` first, then, round again, those up to
/// it, so the last it took is the greatest of the second if it has any.
fn next_start<'a>(
    from: &str,
    keys: impl ExactSizeIterator<Item = Option<&'a str>>,
    limit: usize,
) -> Option<String> {
    if keys.len() < limit {
        return None;
    }
    let (past, round): (Vec<&str>, Vec<&str>) = keys.flatten().partition(|key| *key > from);
    let last = round.into_iter().max().or_else(|| past.into_iter().max());
    last.map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_claim_moves_on_and_a_short_one_starts_again() {
        let keys = [Some("b"), Some("d"), None];
        assert_eq!(next_start("", keys.into_iter(), 3).as_deref(), Some("d"));
        assert_eq!(next_start("", keys.into_iter(), 4), None);
        assert_eq!(
            next_start("", [None].into_iter(), 1),
            None,
            "keyless rows only"
        );
        let cursors = KeyCursors::default();
        assert_eq!(cursors.start("r"), "");
        cursors.advance("r", "", &[], 0);
        assert_eq!(cursors.start("r"), "");
    }

    #[test]
    fn a_walk_round_past_the_last_key_ends_at_the_last_key_it_took_again() {
        let keys = [Some("a"), Some("f"), Some("g"), Some("b")];
        assert_eq!(next_start("c", keys.into_iter(), 4).as_deref(), Some("b"));
        assert_eq!(next_start("a", keys.into_iter(), 4).as_deref(), Some("a"));
        assert_eq!(
            next_start("", [Some("")].into_iter(), 1).as_deref(),
            Some("")
        );
    }
}
