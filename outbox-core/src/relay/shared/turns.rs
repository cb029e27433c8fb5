//! Whose turn it is in a [`SharedRelay`](super::SharedRelay): routes in
//! line within their tenant, tenants in line with each other, and when a
//! resting route is due again.
//!
//! Each turn goes to the tenant at the front of the line, which hands it to
//! its own route at the front of its line; both go to the back after. So
//! every tenant gets one pass per round whatever its number of routes, and
//! within a tenant every route with work gets one.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::Backoff;

/// A route's place in the turns, by the index the relay gave it.
#[derive(Debug, Clone, Copy)]
enum State {
    /// In its tenant's line.
    Ready,
    /// In a pass; `woken` when a wake-up came during it.
    Running { woken: bool },
    /// Resting until `until`; `wakes` when a wake-up brings it forward
    /// (it found nothing), not when it backs off after an error.
    Resting { until: Instant, wakes: bool },
    /// Removed, or never added: it takes no turns.
    Gone,
}

#[derive(Debug, Default)]
pub(super) struct Turns {
    states: Vec<State>,
    /// Per route: its tenant's index in `lines`.
    tenant_of: Vec<usize>,
    failures: Vec<u32>,
    tenants: HashMap<Option<Arc<str>>, usize>,
    /// Per tenant: its routes ready for a pass, in line.
    lines: Vec<VecDeque<usize>>,
    /// Tenants with a route ready, in line.
    tenant_line: VecDeque<usize>,
}

impl Turns {
    /// Adds route `route` of `tenant`, ready.
    pub(super) fn add(&mut self, route: usize, tenant: Option<Arc<str>>) {
        if self.states.len() <= route {
            self.states.resize(route + 1, State::Gone);
            self.tenant_of.resize(route + 1, 0);
            self.failures.resize(route + 1, 0);
        }
        let next = self.tenants.len();
        let tenant = *self.tenants.entry(tenant).or_insert(next);
        if tenant == self.lines.len() {
            self.lines.push(VecDeque::new());
        }
        self.tenant_of[route] = tenant;
        self.failures[route] = 0;
        self.make_ready(route);
    }

    /// Removes `route` from its line; it takes no more turns.
    pub(super) fn remove(&mut self, route: usize) {
        if matches!(self.states[route], State::Ready) {
            self.lines[self.tenant_of[route]].retain(|&r| r != route);
        }
        self.states[route] = State::Gone;
    }

    /// The route whose pass starts next, now running.
    pub(super) fn next_ready(&mut self) -> Option<usize> {
        while let Some(tenant) = self.tenant_line.pop_front() {
            let Some(route) = self.lines[tenant].pop_front() else {
                continue;
            };
            if !self.lines[tenant].is_empty() {
                self.tenant_line.push_back(tenant);
            }
            self.states[route] = State::Running { woken: false };
            return Some(route);
        }
        None
    }

    /// `route`'s pass may have left more: back of its tenant's line.
    pub(super) fn again(&mut self, route: usize) {
        self.failures[route] = 0;
        self.make_ready(route);
    }

    /// `route` found nothing: due again after `poll`, or at a wake-up, or
    /// at once if a wake-up came during its pass.
    pub(super) fn idle(&mut self, route: usize, poll: Duration) {
        if let State::Running { woken: true } = self.states[route] {
            return self.again(route);
        }
        self.failures[route] = 0;
        let until = Instant::now() + poll;
        self.states[route] = State::Resting { until, wakes: true };
    }

    /// `route`'s pass failed: due again after its backoff, returned.
    pub(super) fn failed(&mut self, route: usize, backoff: &Backoff) -> Duration {
        self.failures[route] += 1;
        let delay = backoff.delay(self.failures[route]);
        let until = Instant::now() + delay;
        self.states[route] = State::Resting {
            until,
            wakes: false,
        };
        delay
    }

    /// The earliest moment a resting route is due.
    pub(super) fn next_due(&self) -> Option<Instant> {
        (self.states.iter())
            .filter_map(|state| match state {
                State::Resting { until, .. } => Some(*until),
                _ => None,
            })
            .min()
    }

    /// Routes due by `now` join their lines.
    pub(super) fn wake_due(&mut self, now: Instant) {
        self.wake_where(|until, _| until <= now);
    }

    /// Routes that found nothing join their lines; those running go again
    /// if they find nothing.
    pub(super) fn wake_idle(&mut self) {
        for state in &mut self.states {
            if let State::Running { woken } = state {
                *woken = true;
            }
        }
        self.wake_where(|_, wakes| wakes);
    }

    fn wake_where(&mut self, wakes: impl Fn(Instant, bool) -> bool) {
        for route in 0..self.states.len() {
            if let State::Resting { until, wakes: w } = self.states[route]
                && wakes(until, w)
            {
                self.make_ready(route);
            }
        }
    }

    fn make_ready(&mut self, route: usize) {
        self.states[route] = State::Ready;
        let tenant = self.tenant_of[route];
        let line = &mut self.lines[tenant];
        if line.is_empty() && !self.tenant_line.contains(&tenant) {
            self.tenant_line.push_back(tenant);
        }
        line.push_back(route);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(turns: &mut Turns, n: usize) -> Vec<usize> {
        (0..n)
            .map(|_| {
                let route = turns.next_ready().expect("a route ready");
                turns.again(route);
                route
            })
            .collect()
    }

    #[test]
    fn routes_take_turns_within_one_tenant() {
        let mut turns = Turns::default();
        for route in 0..3 {
            turns.add(route, None);
        }
        assert_eq!(order(&mut turns, 6), [0, 1, 2, 0, 1, 2]);
    }

    #[test]
    fn tenants_take_turns_whatever_their_number_of_routes() {
        let mut turns = Turns::default();
        let (busy, quiet): (Arc<str>, Arc<str>) = ("busy".into(), "quiet".into());
        for route in 0..4 {
            turns.add(route, Some(busy.clone()));
        }
        turns.add(4, Some(quiet));
        // The quiet tenant's one route gets every other turn.
        assert_eq!(order(&mut turns, 8), [0, 4, 1, 4, 2, 4, 3, 4]);
    }

    #[test]
    fn a_route_woken_while_running_goes_again_instead_of_resting() {
        let mut turns = Turns::default();
        turns.add(0, None);
        let route = turns.next_ready().expect("ready");
        turns.wake_idle();
        turns.idle(route, Duration::from_secs(60));
        assert_eq!(turns.next_ready(), Some(0));
    }

    #[test]
    fn a_removed_route_is_skipped() {
        let mut turns = Turns::default();
        turns.add(0, None);
        turns.add(1, None);
        turns.remove(0);
        assert_eq!(turns.next_ready(), Some(1));
        assert_eq!(turns.next_ready(), None);
    }
}
