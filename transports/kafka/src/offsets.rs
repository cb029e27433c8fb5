//! Which offsets of each assigned partition are settled, and so how far the
//! consumer group may commit.
//!
//! Kafka keeps one position per partition, not a mark per record, so a
//! commit says "everything before this offset is done". Deliveries settle
//! out of order (handlers run concurrently), so the position committed is
//! the lowest offset still unsettled, or one past the highest delivered
//! when none is: a record still being handled is never committed past, and
//! a crash redelivers it and what followed it.
//!
//! Each assignment of a partition starts a new generation; settlements of
//! an older generation (a delivery that outlived a rebalance) change
//! nothing, because the partition's new owner redelivers those records.

use std::collections::{BTreeSet, HashMap};

/// A topic and partition.
pub(crate) type PartitionKey = (String, i32);

/// A delivery's place in the tracker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ticket {
    pub(crate) partition: PartitionKey,
    pub(crate) generation: u64,
    pub(crate) offset: i64,
}

#[derive(Debug, Default)]
struct Partition {
    generation: u64,
    unsettled: BTreeSet<i64>,
    /// Records held back until a retry is due: unsettled, but not being
    /// handled.
    held: BTreeSet<i64>,
    next: Option<i64>,
    committed: Option<i64>,
    /// The group had committed a position for the partition when it was
    /// assigned, and this consumer has settled none of its records since.
    resumed: bool,
}

impl Partition {
    fn position(&self) -> Option<i64> {
        self.unsettled.first().copied().or(self.next)
    }
}

/// The offsets of every partition assigned to one consumer.
#[derive(Debug, Default)]
pub(crate) struct Offsets {
    partitions: HashMap<PartitionKey, Partition>,
    generations: u64,
}

impl Offsets {
    /// Starts tracking a newly assigned partition. `resumed`: the group has
    /// a committed position for it, so the first record read may have been
    /// delivered to an earlier member that died before settling it.
    pub(crate) fn assign(&mut self, partition: PartitionKey, resumed: bool) {
        self.generations += 1;
        let state = Partition {
            generation: self.generations,
            resumed,
            ..Partition::default()
        };
        self.partitions.insert(partition, state);
    }

    /// Stops tracking a revoked partition; returns the position to commit
    /// for it, if one is known and not yet committed.
    pub(crate) fn revoke(&mut self, partition: &PartitionKey) -> Option<i64> {
        let state = self.partitions.remove(partition)?;
        state.position().filter(|p| Some(*p) != state.committed)
    }

    /// Records the delivery of `offset`. Returns its ticket and whether the
    /// record may have been delivered before (read from a resumed
    /// partition before this consumer settled any of its records), or
    /// `None` when the partition is not assigned.
    pub(crate) fn deliver(
        &mut self,
        partition: &PartitionKey,
        offset: i64,
    ) -> Option<(Ticket, bool)> {
        let state = self.partitions.get_mut(partition)?;
        let resumed = state.resumed;
        state.unsettled.insert(offset);
        state.next = Some(state.next.map_or(offset + 1, |n| n.max(offset + 1)));
        let ticket = Ticket {
            partition: partition.clone(),
            generation: state.generation,
            offset,
        };
        Some((ticket, resumed))
    }

    /// Marks a delivered record as held until its retry is due.
    pub(crate) fn hold(&mut self, ticket: &Ticket) {
        if let Some(state) = self.current(ticket) {
            state.held.insert(ticket.offset);
        }
    }

    /// Marks a held record as handed out. Returns `false` when its
    /// partition was revoked meanwhile: the record is no longer this
    /// consumer's to deliver.
    pub(crate) fn release(&mut self, ticket: &Ticket) -> bool {
        match self.current(ticket) {
            Some(state) => state.held.remove(&ticket.offset),
            None => false,
        }
    }

    /// Marks a record settled. Returns `false` for a ticket of an earlier
    /// assignment, which changes nothing.
    pub(crate) fn settle(&mut self, ticket: &Ticket) -> bool {
        match self.current(ticket) {
            Some(state) => {
                state.resumed = false;
                state.held.remove(&ticket.offset);
                state.unsettled.remove(&ticket.offset)
            }
            None => false,
        }
    }

    /// Whether the ticket's partition is still assigned in its generation.
    pub(crate) fn is_current(&self, ticket: &Ticket) -> bool {
        self.partitions
            .get(&ticket.partition)
            .is_some_and(|s| s.generation == ticket.generation)
    }

    /// Records being handled (delivered, unsettled, not held) in `partitions`.
    pub(crate) fn in_hand(&self, partitions: &[PartitionKey]) -> usize {
        partitions
            .iter()
            .filter_map(|p| self.partitions.get(p))
            .map(|s| s.unsettled.len() - s.held.len())
            .sum()
    }

    /// Positions that moved since the last commit, marked committed.
    pub(crate) fn take_commits(&mut self) -> Vec<(PartitionKey, i64)> {
        let mut commits = Vec::new();
        for (key, state) in &mut self.partitions {
            if let Some(position) = state.position().filter(|p| Some(*p) != state.committed) {
                state.committed = Some(position);
                commits.push((key.clone(), position));
            }
        }
        commits
    }

    /// Forgets that `partition` was committed at `position`, after the
    /// commit failed, so the next round commits it again.
    pub(crate) fn commit_failed(&mut self, partition: &PartitionKey, position: i64) {
        if let Some(state) = self.partitions.get_mut(partition) {
            if state.committed == Some(position) {
                state.committed = None;
            }
        }
    }

    fn current(&mut self, ticket: &Ticket) -> Option<&mut Partition> {
        self.partitions
            .get_mut(&ticket.partition)
            .filter(|s| s.generation == ticket.generation)
    }
}

#[cfg(test)]
mod tests;
