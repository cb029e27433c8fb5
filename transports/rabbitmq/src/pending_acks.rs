//! The bookkeeping of an ack window: which deliveries of a channel are
//! unsettled, which of them are acked and waiting to go out, and which
//! acks may go out now.

use std::collections::BTreeMap;

/// Each unsettled delivery of a channel by tag, with the ack (`A`) it was
/// marked with, if it was.
#[derive(Debug)]
pub(crate) struct Pending<A> {
    deliveries: BTreeMap<u64, Option<A>>,
}

impl<A> Default for Pending<A> {
    fn default() -> Self {
        Self {
            deliveries: BTreeMap::new(),
        }
    }
}

impl<A> Pending<A> {
    /// Enters an unsettled delivery.
    pub(crate) fn enter(&mut self, tag: u64) {
        self.deliveries.insert(tag, None);
    }

    /// Marks `tag` acked; returns the last tag of the run at the front
    /// when `tag` is in it.
    pub(crate) fn mark(&mut self, tag: u64, ack: A) -> Option<u64> {
        if let Some(slot) = self.deliveries.get_mut(&tag) {
            *slot = Some(ack);
        }
        self.front_run().filter(|last| *last >= tag)
    }

    /// Removes `tag`; returns the last tag of the run at the front when
    /// the removal let that run go.
    pub(crate) fn remove(&mut self, tag: u64) -> Option<u64> {
        let was_first = self.deliveries.keys().next() == Some(&tag);
        self.deliveries.remove(&tag);
        self.front_run().filter(|_| was_first)
    }

    /// The last tag of the run of marked deliveries at the front.
    fn front_run(&self) -> Option<u64> {
        self.deliveries
            .iter()
            .take_while(|(_, ack)| ack.is_some())
            .last()
            .map(|(tag, _)| *tag)
    }

    /// Takes out the acks held back behind an unsettled delivery, in tag
    /// order, once there are at least `limit` of them.
    pub(crate) fn take_held_back(&mut self, limit: usize) -> Vec<A> {
        let tags: Vec<u64> = (self.deliveries.iter())
            .skip_while(|(_, ack)| ack.is_some())
            .filter(|(_, ack)| ack.is_some())
            .map(|(tag, _)| *tag)
            .collect();
        if tags.len() < limit {
            return Vec::new();
        }
        let acks = tags.iter().filter_map(|tag| self.deliveries.remove(tag));
        acks.flatten().collect()
    }

    /// Takes the run at the front out: its last tag, with that delivery's
    /// ack, which sent with `multiple` settles the whole run.
    pub(crate) fn take_front(&mut self) -> Option<(u64, A)> {
        let mut last = None;
        while let Some(entry) = self.deliveries.first_entry() {
            if entry.get().is_none() {
                break;
            }
            let (tag, ack) = entry.remove_entry();
            last = ack.map(|ack| (tag, ack));
        }
        last
    }
}

#[cfg(test)]
mod tests {
    use super::Pending;

    fn window(tags: std::ops::RangeInclusive<u64>) -> Pending<u64> {
        let mut pending = Pending::default();
        tags.for_each(|tag| pending.enter(tag));
        pending
    }

    #[test]
    fn a_run_at_the_front_goes_as_one_ack_of_its_last_tag() {
        let mut pending = window(1..=5);
        assert_eq!(pending.mark(1, 1), Some(1));
        assert_eq!(pending.mark(2, 2), Some(2));
        assert_eq!(pending.mark(3, 3), Some(3));
        assert_eq!(pending.take_front(), Some((3, 3)));
        assert_eq!(pending.take_front(), None);
        assert_eq!(
            pending.deliveries.keys().copied().collect::<Vec<_>>(),
            [4, 5]
        );
    }

    #[test]
    fn acks_behind_an_unsettled_delivery_wait_for_it() {
        let mut pending = window(1..=4);
        assert_eq!(pending.mark(2, 2), None, "1 is still being handled");
        assert_eq!(pending.mark(4, 4), None);
        assert_eq!(pending.take_front(), None, "nothing may cover 1");
        assert_eq!(pending.mark(1, 1), Some(2), "1 lets 1 and 2 go");
        assert_eq!(pending.take_front(), Some((2, 2)));
        assert_eq!(pending.mark(3, 3), Some(4));
        assert_eq!(pending.take_front(), Some((4, 4)));
    }

    #[test]
    fn a_delivery_settled_otherwise_leaves_and_lets_the_run_behind_it_go() {
        let mut pending = window(1..=3);
        assert_eq!(pending.mark(2, 2), None);
        assert_eq!(pending.remove(3), None, "3 was not at the front");
        assert_eq!(pending.remove(1), Some(2), "1 was nacked, 2 may go");
        assert_eq!(pending.take_front(), Some((2, 2)));
        assert!(pending.deliveries.is_empty());
    }

    #[test]
    fn acks_held_back_go_alone_once_they_reach_the_limit() {
        let mut pending = window(1..=6);
        assert_eq!(pending.mark(3, 3), None);
        assert_eq!(pending.mark(5, 5), None);
        assert!(pending.take_held_back(3).is_empty(), "two of three");
        assert_eq!(pending.mark(6, 6), None);
        assert_eq!(pending.take_held_back(3), [3, 5, 6]);
        let left: Vec<_> = pending.deliveries.keys().copied().collect();
        assert_eq!(left, [1, 2, 4]);
        assert_eq!(pending.mark(1, 1), Some(1));
        assert!(pending.take_held_back(1).is_empty(), "1 is at the front");
        assert_eq!(pending.take_front(), Some((1, 1)));
    }

    #[test]
    fn an_unknown_tag_changes_nothing() {
        let mut pending = window(1..=2);
        assert_eq!(pending.mark(9, 9), None);
        assert_eq!(pending.remove(7), None);
        assert_eq!(pending.deliveries.len(), 2);
        assert_eq!(pending.take_front(), None);
    }
}
