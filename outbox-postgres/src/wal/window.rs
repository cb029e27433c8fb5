//! The events read from the slot and not yet finished, in commit order:
//! which of them a claim may take, and how far the slot may be confirmed.
//!
//! Every event read enters the window and leaves it only once it is
//! finished (published, failed into the table, or refused and recorded).
//! The slot's position is confirmed only up to the end of the last
//! transaction all of whose events, and all before them, are finished, so
//! a relay that dies re-reads everything unfinished: at least once. A
//! retry waits in the window, holding the position, so a key's later
//! events wait behind it on per-key routes.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::time::{Duration, SystemTime};

use tidings_core::{Envelope, OrderingMode, OutboxRecord, Route, StagedEvent};

/// An event as read from the slot.
#[derive(Debug, Clone)]
pub(crate) struct Incoming {
    pub(crate) envelope: Envelope,
    /// The outbox row it was read from, in table mode.
    pub(crate) row: Option<i64>,
    /// Not claimable before this time (a delayed event).
    pub(crate) due: Option<SystemTime>,
    /// Set where no relay may publish it: why it is failed at once.
    pub(crate) doomed: Option<String>,
}

/// Where an event stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Ready,
    Claimed,
    Waiting(SystemTime),
    /// To be failed into the table without publishing.
    Doomed,
    Done,
}

#[derive(Debug)]
struct Entry {
    incoming: Incoming,
    attempts: u32,
    last_error: Option<String>,
    state: State,
}

/// A claimed event: its place in the window and its record.
#[derive(Debug)]
pub(crate) struct Claimed {
    pub(crate) seq: u64,
    pub(crate) row: Option<i64>,
    pub(crate) record: OutboxRecord,
}

/// An event to fail without publishing, with why.
#[derive(Debug)]
pub(crate) struct Doomed {
    pub(crate) seq: u64,
    pub(crate) incoming: Incoming,
    pub(crate) reason: String,
}

/// The window of one slot's reader.
#[derive(Debug, Default)]
pub(crate) struct Window {
    /// Bumped when the stream restarts: claims of an older generation
    /// settle nothing, their events are read again.
    generation: u64,
    entries: VecDeque<Entry>,
    /// The sequence number of `entries[0]`.
    base: u64,
    /// Each transaction read: its last event's sequence number plus one,
    /// and where it ends in the log.
    commits: VecDeque<(u64, u64)>,
    ready: HashMap<String, BTreeSet<u64>>,
    waiting: BTreeSet<(SystemTime, u64)>,
    doomed: BTreeSet<u64>,
    /// The unfinished events of each route's ordering keys, oldest first,
    /// by route and key.
    keys: HashMap<String, HashMap<String, VecDeque<u64>>>,
    /// The position everything before is finished at.
    confirmed: u64,
    /// The payload bytes of the events in the window.
    bytes: usize,
}

impl Window {
    /// The current generation.
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// Events in the window, finished ones not yet dropped included.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Their payloads' bytes.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Forgets everything unfinished, which the restarted stream reads
    /// again from `position`.
    pub(crate) fn restart(&mut self, position: u64) {
        let generation = self.generation + 1;
        *self = Self {
            generation,
            base: self.base + self.entries.len() as u64,
            confirmed: position.max(self.confirmed),
            ..Self::default()
        };
    }

    fn next_seq(&self) -> u64 {
        self.base + self.entries.len() as u64
    }

    /// Where the event at `seq` stands in `entries`, if it is there.
    fn index(&self, seq: u64) -> Option<usize> {
        let at = usize::try_from(seq.checked_sub(self.base)?).ok()?;
        (at < self.entries.len()).then_some(at)
    }

    fn entry(&mut self, seq: u64) -> Option<&mut Entry> {
        let at = self.index(seq)?;
        self.entries.get_mut(at)
    }

    /// Adds one committed transaction's events, ending at `end` in the log.
    pub(crate) fn commit(&mut self, events: Vec<Incoming>, end: u64) {
        for incoming in events {
            let seq = self.next_seq();
            let route = incoming.envelope.route.clone();
            let state = match (&incoming.doomed, incoming.due) {
                (Some(_), _) => {
                    self.doomed.insert(seq);
                    State::Doomed
                }
                (None, Some(due)) if due > SystemTime::now() => {
                    self.waiting.insert((due, seq));
                    State::Waiting(due)
                }
                (None, _) => {
                    self.ready.entry(route.clone()).or_default().insert(seq);
                    State::Ready
                }
            };
            self.bytes += incoming.envelope.payload.len();
            if let Some(key) = &incoming.envelope.ordering_key {
                self.keys
                    .entry(route)
                    .or_default()
                    .entry(key.clone())
                    .or_default()
                    .push_back(seq);
            }
            self.entries.push_back(Entry {
                incoming,
                attempts: 0,
                last_error: None,
                state,
            });
        }
        self.commits.push_back((self.next_seq(), end));
    }

    /// Where the stream stands with nothing of ours in flight: a position
    /// to confirm once everything before is finished.
    pub(crate) fn idle(&mut self, position: u64) {
        if self.entries.is_empty() && self.commits.is_empty() {
            self.confirmed = self.confirmed.max(position);
        }
    }

    /// When the earliest waiting event falls due.
    pub(crate) fn next_due(&self) -> Option<SystemTime> {
        self.waiting.first().map(|(due, _)| *due)
    }

    /// Claims up to `limit` of `route`'s claimable events, oldest first:
    /// on a per-key route only the oldest unfinished event of a key.
    pub(crate) fn claim(&mut self, route: &Route, limit: usize) -> Vec<Claimed> {
        self.wake_due(SystemTime::now());
        let per_key = route.ordering == OrderingMode::PerKey;
        let name: &str = &route.name;
        let Some(ready) = self.ready.get(name) else {
            return Vec::new();
        };
        let keys = self.keys.get(name);
        let mut chosen = Vec::new();
        for &seq in ready {
            if chosen.len() == limit {
                break;
            }
            let at = (seq - self.base) as usize;
            let envelope = &self.entries[at].incoming.envelope;
            let first_of_key = match (&envelope.ordering_key, per_key) {
                (Some(key), true) => {
                    let queue = keys.and_then(|keys| keys.get(key.as_str()));
                    queue.and_then(VecDeque::front) == Some(&seq)
                }
                _ => true,
            };
            if first_of_key {
                chosen.push(seq);
            }
        }
        let mut claimed = Vec::with_capacity(chosen.len());
        for seq in chosen {
            if let Some(ready) = self.ready.get_mut(name) {
                ready.remove(&seq);
            }
            let at = (seq - self.base) as usize;
            let entry = &mut self.entries[at];
            entry.state = State::Claimed;
            entry.attempts += 1;
            let mut envelope = entry.incoming.envelope.clone();
            envelope.attempts = entry.attempts;
            claimed.push(Claimed {
                seq,
                row: entry.incoming.row,
                record: OutboxRecord {
                    envelope,
                    attempts_started: entry.attempts,
                    attempts_finished: entry.attempts - 1,
                    last_error: entry.last_error.clone(),
                },
            });
        }
        claimed
    }

    /// Moves events due by `now` from waiting to ready.
    fn wake_due(&mut self, now: SystemTime) {
        while let Some(&(due, seq)) = self.waiting.first() {
            if due > now {
                break;
            }
            self.waiting.pop_first();
            if let Some(entry) = self.entry(seq) {
                entry.state = State::Ready;
                let route = entry.incoming.envelope.route.clone();
                self.ready.entry(route).or_default().insert(seq);
            }
        }
    }

    /// Takes the events to fail without publishing.
    pub(crate) fn take_doomed(&mut self) -> Vec<Doomed> {
        let seqs = std::mem::take(&mut self.doomed);
        let mut doomed = Vec::with_capacity(seqs.len());
        for seq in seqs {
            if let Some(entry) = self.entry(seq) {
                entry.state = State::Claimed;
                let reason = entry.incoming.doomed.clone().unwrap_or_default();
                doomed.push(Doomed {
                    seq,
                    incoming: entry.incoming.clone(),
                    reason,
                });
            }
        }
        doomed
    }

    /// Puts events taken by [`take_doomed`](Self::take_doomed) back, their
    /// failure not recorded.
    pub(crate) fn restore_doomed(&mut self, generation: u64, seqs: impl IntoIterator<Item = u64>) {
        if generation == self.generation {
            self.doomed.extend(seqs);
        }
    }

    /// Finishes a claimed event of `generation`; false where the window
    /// restarted since the claim.
    pub(crate) fn finish(&mut self, generation: u64, seq: u64) -> bool {
        if generation != self.generation {
            return false;
        }
        let Some(at) = self.index(seq) else {
            return false;
        };
        // The fields borrowed apart: the entry's key, the keys' queues.
        let entry = &mut self.entries[at];
        entry.state = State::Done;
        let envelope = &entry.incoming.envelope;
        if let Some(key) = &envelope.ordering_key {
            let route = envelope.route.as_str();
            if let Some(keys) = self.keys.get_mut(route) {
                if let Some(queue) = keys.get_mut(key.as_str()) {
                    queue.retain(|&s| s != seq);
                    if queue.is_empty() {
                        keys.remove(key.as_str());
                    }
                }
                if keys.is_empty() {
                    self.keys.remove(route);
                }
            }
        }
        true
    }

    /// A claimed event of `generation` about to be failed: a copy of it,
    /// and the attempts it had; `None` where the window restarted since.
    pub(crate) fn failing(&mut self, generation: u64, seq: u64) -> Option<(StagedEvent, u32)> {
        if generation != self.generation {
            return None;
        }
        let entry = self.entry(seq)?;
        let event = StagedEvent {
            envelope: entry.incoming.envelope.clone(),
            delay: None,
        };
        Some((event, entry.attempts))
    }

    /// The attempts made of the event at `seq`.
    pub(crate) fn attempts(&mut self, seq: u64) -> i32 {
        self.entry(seq)
            .map_or(0, |e| i32::try_from(e.attempts).unwrap_or(i32::MAX))
    }

    /// Sends a claimed event of `generation` back to wait `delay`, after
    /// an attempt that failed with `error`.
    pub(crate) fn retry(
        &mut self,
        generation: u64,
        seq: u64,
        delay: Duration,
        error: String,
    ) -> bool {
        if generation != self.generation {
            return false;
        }
        let due = SystemTime::now() + delay;
        let Some(entry) = self.entry(seq) else {
            return false;
        };
        entry.state = State::Waiting(due);
        entry.last_error = Some(error);
        self.waiting.insert((due, seq));
        true
    }

    /// Drops the finished events at the front and returns the position
    /// everything before is finished at, where it moved.
    pub(crate) fn advance(&mut self) -> Option<u64> {
        let before = self.confirmed;
        while self.entries.front().is_some_and(|e| e.state == State::Done) {
            if let Some(done) = self.entries.pop_front() {
                self.bytes -= done.incoming.envelope.payload.len();
            }
            self.base += 1;
        }
        while let Some(&(end_seq, end)) = self.commits.front() {
            if end_seq > self.base {
                break;
            }
            self.confirmed = self.confirmed.max(end);
            self.commits.pop_front();
        }
        (self.confirmed > before).then_some(self.confirmed)
    }

    /// `route`'s events waiting (ready, delayed or retrying) and in flight,
    /// and when the oldest waiting one occurred.
    pub(crate) fn counts(&self, route: &str) -> (u64, u64, Option<SystemTime>) {
        let (mut waiting, mut in_flight, mut oldest) = (0, 0, None::<SystemTime>);
        let of_route = self
            .entries
            .iter()
            .filter(|e| e.incoming.envelope.route == route);
        for entry in of_route {
            match entry.state {
                State::Ready | State::Waiting(_) => {
                    waiting += 1;
                    let at = entry.incoming.envelope.occurred_at;
                    oldest = Some(oldest.map_or(at, |o| o.min(at)));
                }
                State::Claimed | State::Doomed => in_flight += 1,
                State::Done => {}
            }
        }
        (waiting, in_flight, oldest)
    }

    /// The position everything before is finished at.
    pub(crate) fn confirmed(&self) -> u64 {
        self.confirmed
    }
}

#[cfg(test)]
mod tests;
