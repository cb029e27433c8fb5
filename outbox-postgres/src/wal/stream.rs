//! The replication stream's events, as they come: transactions gathered
//! and committed into the window, changes and messages read into events.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use pgwire_replication::{Lsn, ReplicationEvent};
use tidings_core::Envelope;
use tracing::warn;

use super::Shared;
use super::pgoutput::{Change, Relations, outbox_row};
use super::window::Incoming;
use crate::tailing::{TailMode, decode};

/// The events of the stream, as they come.
pub(super) struct Stream<'a> {
    shared: &'a Shared,
    relations: Relations,
    /// The events of the transaction being read.
    open: Option<Vec<Incoming>>,
    committed_at: SystemTime,
}

impl<'a> Stream<'a> {
    /// A stream starting on a new connection.
    pub(super) fn new(shared: &'a Shared) -> Self {
        Self {
            shared,
            relations: Relations::default(),
            open: None,
            committed_at: UNIX_EPOCH,
        }
    }

    /// Takes one event of the stream.
    pub(super) fn take(&mut self, event: ReplicationEvent) {
        match event {
            ReplicationEvent::Begin {
                commit_time_micros, ..
            } => {
                self.open = Some(Vec::new());
                self.committed_at = postgres_time(commit_time_micros);
            }
            ReplicationEvent::XLogData {
                data, wal_start, ..
            } => self.change(&data, wal_start),
            ReplicationEvent::Message {
                prefix,
                content,
                transactional,
                lsn,
            } => {
                if prefix == self.shared.tailing.prefix && transactional {
                    self.message(content, lsn);
                }
            }
            ReplicationEvent::Commit { end_lsn, .. } => {
                let events = self.open.take().unwrap_or_default();
                let any = !events.is_empty();
                self.shared.window().commit(events, end_lsn.as_u64());
                if any {
                    self.shared.wakeup.wake();
                }
            }
            ReplicationEvent::KeepAlive { wal_end, .. } => {
                if self.open.is_none() {
                    self.shared.window().idle(wal_end.as_u64());
                }
            }
            ReplicationEvent::StoppedAt { .. } => {}
        }
    }

    /// An event staged as a message.
    fn message(&mut self, content: Bytes, lsn: Lsn) {
        let incoming = match decode(&content) {
            Ok(tailed) => {
                let due = self.due(tailed.delay);
                self.incoming(tailed.envelope, None, due)
            }
            Err(e) => {
                warn!(%lsn, error = %e, "unreadable outbox message; failing it");
                let envelope = Envelope::new(
                    UNREADABLE_ROUTE,
                    "",
                    "unreadable",
                    content,
                    "application/octet-stream",
                );
                Incoming {
                    envelope,
                    row: None,
                    due: None,
                    doomed: Some(format!("unreadable outbox message at {lsn}: {e}")),
                }
            }
        };
        self.push(incoming);
    }

    /// A change of table mode.
    fn change(&mut self, data: &Bytes, lsn: Lsn) {
        if self.shared.tailing.mode != TailMode::Table {
            return;
        }
        let names = &self.shared.store.inner().names;
        let change = match self.relations.decode(data) {
            Ok(change) => change,
            Err(e) => return warn!(%lsn, error = %e, "unreadable change skipped"),
        };
        let Change::Insert { relation, values } = change else {
            return;
        };
        let Some(relation) = self.relations.get(relation) else {
            return warn!(%lsn, "an insert into an undescribed relation skipped");
        };
        if relation.schema != names.schema || relation.table != names.outbox {
            return;
        }
        match outbox_row(relation, values) {
            Ok(row) => {
                let due = self.due(row.delay);
                let incoming = self.incoming(row.envelope, Some(row.id), due);
                self.push(incoming);
            }
            // The row stays pending in the table, counted by its stats.
            Err(e) => warn!(%lsn, error = %e, "unreadable outbox row left pending"),
        }
    }

    /// When an event staged with `delay` falls due: that long after its
    /// commit by the server's clock, or after now by this one's, whichever
    /// comes first, so that neither clock running ahead delays it further
    /// and a backlog read late is not delayed again.
    fn due(&self, delay: Duration) -> Option<SystemTime> {
        if delay.is_zero() {
            return None;
        }
        Some((self.committed_at + delay).min(SystemTime::now() + delay))
    }

    /// An event read, doomed where no relay of the slot serves its route.
    fn incoming(&self, envelope: Envelope, row: Option<i64>, due: Option<SystemTime>) -> Incoming {
        let served = self
            .shared
            .options
            .get_routes()
            .iter()
            .any(|r| r.name == envelope.route);
        let doomed = (!served).then(|| {
            format!(
                "no relay of slot {} serves route {:?}: relay it, then requeue",
                self.shared.tailing.slot, envelope.route
            )
        });
        Incoming {
            envelope,
            row,
            due,
            doomed,
        }
    }

    fn push(&mut self, incoming: Incoming) {
        match &mut self.open {
            Some(events) => events.push(incoming),
            None => warn!("an outbox event outside a transaction skipped"),
        }
    }
}

/// The route unreadable messages are failed under.
pub(crate) const UNREADABLE_ROUTE: &str = "unreadable";

/// A time the replication protocol gives: microseconds since 2000-01-01.
fn postgres_time(micros: i64) -> SystemTime {
    let epoch = UNIX_EPOCH + Duration::from_secs(946_684_800);
    match u64::try_from(micros) {
        Ok(micros) => epoch + Duration::from_micros(micros),
        Err(_) => epoch,
    }
}
