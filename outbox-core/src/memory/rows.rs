//! The rows of one route and their state.

use std::collections::{BTreeMap, HashMap};
use std::time::SystemTime;

use uuid::Uuid;

use crate::{Envelope, LeaseToken, OutboxRecord};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Status {
    Pending,
    InFlight {
        lease: LeaseToken,
        expires_at: SystemTime,
    },
    Published,
    Failed,
}

#[derive(Debug, Clone)]
pub(super) struct Row {
    pub(super) envelope: Envelope,
    pub(super) status: Status,
    pub(super) available_at: SystemTime,
    pub(super) started: u32,
    pub(super) finished: u32,
    pub(super) last_error: Option<String>,
    pub(super) finished_at: Option<SystemTime>,
}

impl Row {
    pub(super) fn record(&self) -> OutboxRecord {
        let mut envelope = self.envelope.clone();
        envelope.attempts = self.started;
        OutboxRecord {
            envelope,
            attempts_started: self.started,
            attempts_finished: self.finished,
            last_error: self.last_error.clone(),
        }
    }

    pub(super) fn held_by(&self, lease: LeaseToken) -> bool {
        matches!(self.status, Status::InFlight { lease: l, .. } if l == lease)
    }
}

/// One route's rows in staging order, indexed by event id.
#[derive(Debug, Default)]
pub(super) struct RouteRows {
    pub(super) rows: BTreeMap<u64, Row>,
    pub(super) by_id: HashMap<Uuid, u64>,
}

impl RouteRows {
    pub(super) fn insert(&mut self, seq: u64, row: Row) {
        self.by_id.insert(row.envelope.event_id, seq);
        self.rows.insert(seq, row);
    }

    pub(super) fn get_mut(&mut self, id: Uuid) -> Option<&mut Row> {
        let seq = self.by_id.get(&id)?;
        self.rows.get_mut(seq)
    }

    pub(super) fn remove(&mut self, id: Uuid) {
        if let Some(seq) = self.by_id.remove(&id) {
            self.rows.remove(&seq);
        }
    }

    pub(super) fn count(&self, pred: impl Fn(&Row) -> bool) -> u64 {
        self.rows.values().filter(|r| pred(r)).count() as u64
    }
}
