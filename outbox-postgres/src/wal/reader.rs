//! The task reading a store's slot into its window: one session per
//! connection, standing by while another relay holds the slot, stopping
//! for good when the slot may have skipped events.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use pgwire_replication::{Lsn, ReplicationClient, ReplicationEvent};
use tidings_core::port::error_chain;
use tidings_core::{Backoff, Envelope, StoreError};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::Shared;
use super::batch::{Failure, write};
use super::pgoutput::{Change, Relations, outbox_row};
use super::window::Incoming;
use crate::tailing::{TailMode, decode};

/// How a session ended.
enum Stop {
    /// The slot may have skipped events, or cannot be used: for good.
    Fatal(String),
    /// Another relay holds the slot.
    Standby,
    /// The connection or the database failed; try again.
    Lost(String),
}

impl From<StoreError> for Stop {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Misconfigured(why) => Stop::Fatal(why),
            other => Stop::Lost(error_chain(&other)),
        }
    }
}

/// Reads the slot until `cancel` fires or the slot cannot be trusted.
pub(super) async fn run(shared: Arc<Shared>, cancel: CancellationToken) {
    let backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(5));
    let mut failures = 0;
    while !cancel.is_cancelled() {
        let ended = session(&shared, &cancel).await;
        shared.active.store(false, Ordering::Release);
        let pause = match ended {
            Ok(()) => return,
            Err(Stop::Fatal(why)) => return shared.stop_for_good(why),
            Err(Stop::Standby) => {
                failures = 0;
                debug!(slot = %shared.tailing.slot, "slot held by another relay; standing by");
                shared.options.get_takeover_interval()
            }
            Err(Stop::Lost(why)) => {
                failures += 1;
                let delay = backoff.delay(failures);
                warn!(slot = %shared.tailing.slot, error = %why, retry_in = ?delay, "slot reading stopped");
                delay
            }
        };
        tokio::select! {
            () = cancel.cancelled() => return,
            () = tokio::time::sleep(pause) => {}
        }
    }
}

/// One replication connection, from the slot check to its end.
async fn session(shared: &Shared, cancel: &CancellationToken) -> Result<(), Stop> {
    let start = start_position(shared).await?;
    let config = shared.options.replication(&shared.tailing, start);
    let mut client = ReplicationClient::connect(config)
        .await
        .map_err(|e| Stop::Lost(e.to_string()))?;
    let started = tokio::time::timeout(Duration::from_secs(30), client.wait_started()).await;
    match started {
        Err(_) => return Err(Stop::Lost("the slot did not start within 30 s".into())),
        Ok(Err(e)) if held_elsewhere(&e.to_string()) => return Err(Stop::Standby),
        Ok(Err(e)) => return Err(Stop::Lost(e.to_string())),
        Ok(Ok(())) => {}
    }
    shared.window().restart(start);
    shared.active.store(true, Ordering::Release);
    info!(slot = %shared.tailing.slot, position = %Lsn::from_u64(start), "reading the slot");
    let mut stream = Stream {
        shared,
        relations: Relations::default(),
        open: None,
        committed_at: UNIX_EPOCH,
    };
    let mut recorded = start;
    let mut tick = tokio::time::interval(shared.options.get_confirm_interval());
    let mut woken_for = None;
    let mut ticks: u32 = 0;
    loop {
        let full = {
            let window = shared.window();
            let options = &shared.options;
            window.len() >= options.get_max_window()
                || window.bytes() >= options.get_max_window_bytes()
        };
        let due = shared
            .window()
            .next_due()
            .filter(|&due| Some(due) != woken_for);
        tokio::select! {
            () = cancel.cancelled() => {
                client.stop();
                return Ok(());
            }
            _ = tick.tick() => {
                recorded = match confirm(shared, &client, recorded).await {
                    Ok(recorded) => recorded,
                    Err(stop) => {
                        // Closed at once: a server shutting down waits for
                        // this connection, and the relay reads again from
                        // the recorded position once it is back.
                        client.abort();
                        return Err(stop);
                    }
                };
                ticks = ticks.wrapping_add(1);
                if ticks % 25 == 1 {
                    report_slot(shared).await;
                }
            }
            () = shared.room.notified(), if full => {}
            () = sleep_until(due) => {
                woken_for = due;
                shared.wakeup.wake();
            }
            event = client.recv(), if !full => match event {
                Ok(Some(event)) => stream.take(event),
                Ok(None) => return Err(Stop::Lost("the replication stream ended".into())),
                Err(e) => return Err(Stop::Lost(e.to_string())),
            },
        }
    }
}

/// Whether the server refused the slot because another session holds it.
fn held_elsewhere(error: &str) -> bool {
    error.contains("55006") || error.contains("is active for PID")
}

async fn sleep_until(due: Option<SystemTime>) {
    match due {
        Some(due) => {
            let wait = due.duration_since(SystemTime::now()).unwrap_or_default();
            tokio::time::sleep(wait).await;
        }
        None => std::future::pending().await,
    }
}

/// Where the session starts: the slot's confirmed position, once the
/// slot is found where the relay recorded it.
async fn start_position(shared: &Shared) -> Result<u64, Stop> {
    let store = &shared.store;
    let slot = &shared.tailing.slot;
    let recover = "Recover the events committed in between (in table mode they are still \
         pending in the outbox table, and accepting the slot stages them again), then accept \
         the slot where it stands with PgOutboxStore::accept_slot_position \
         (`tidings slot accept`)";
    let state = store.slot_state().await?;
    let recorded = store.recorded_position().await?;
    match (state, recorded) {
        (None, None) => Err(Stop::Fatal(format!(
            "the replication slot {slot} does not exist: run PgOutboxStore::migrate \
             (`tidings migrate`) to create it"
        ))),
        (None, Some(at)) => Err(Stop::Fatal(format!(
            "the replication slot {slot} is gone, and the relay had read it up to {}: \
             events committed after that were not read. Create the slot again with \
             PgOutboxStore::migrate (`tidings migrate`). {recover}.",
            Lsn::from_u64(at)
        ))),
        (Some(state), Some(at)) if state.confirmed > at => Err(Stop::Fatal(format!(
            "the replication slot {slot} stands at {}, past {} where the relay recorded \
             it: it was dropped and created again, or advanced by hand, and skipped what \
             was committed in between. {recover}.",
            Lsn::from_u64(state.confirmed),
            Lsn::from_u64(at)
        ))),
        (Some(state), None) => {
            store.record_first_position(state.confirmed).await?;
            Ok(state.confirmed)
        }
        (Some(state), Some(_)) => Ok(state.confirmed),
    }
}

/// Writes the window's doomed events as failed, records how far
/// everything is finished and confirms it to the slot; returns the
/// position recorded. A position that cannot be recorded is not
/// confirmed, and ends the session: the slot never stands past the
/// recorded position but where it was lost, and a server shutting down,
/// whose sessions are gone, is not kept waiting for a confirmation.
async fn confirm(shared: &Shared, client: &ReplicationClient, recorded: u64) -> Result<u64, Stop> {
    let (generation, doomed) = {
        let mut window = shared.window();
        (window.generation(), window.take_doomed())
    };
    if !doomed.is_empty() {
        let failures: Vec<Failure> = doomed.into_iter().map(Failure::doomed).collect();
        let written = write(shared, &[], &failures).await;
        let mut window = shared.window();
        match written {
            Ok(()) => failures.iter().for_each(|f| {
                window.finish(generation, f.seq);
            }),
            Err(e) => {
                warn!(error = %error_chain(&e), "failing unpublishable events failed");
                window.restore_doomed(generation, failures.iter().map(|f| f.seq));
            }
        }
    }
    let confirmed = {
        let mut window = shared.window();
        window.advance();
        window.confirmed()
    };
    shared.room.notify_waiters();
    if confirmed <= recorded {
        return Ok(recorded);
    }
    if let Err(e) = shared.store.record_position(confirmed).await {
        let why = format!("recording the slot's position failed: {}", error_chain(&e));
        return Err(Stop::Lost(why));
    }
    client.update_applied_lsn(Lsn::from_u64(confirmed));
    Ok(confirmed)
}

/// Reports the slot's lag and retained log as metrics.
async fn report_slot(shared: &Shared) {
    let labels = [("slot", shared.tailing.slot.clone())];
    match shared.store.slot_state().await {
        Ok(Some(state)) => {
            metrics::gauge!("tidings_wal_lag_bytes", &labels).set(state.lag_bytes() as f64);
            metrics::gauge!("tidings_wal_retained_bytes", &labels)
                .set(state.retained_bytes() as f64);
        }
        Ok(None) => {}
        Err(e) => debug!(error = %error_chain(&e), "reading the slot's state failed"),
    }
}

/// The events of the stream, as they come.
struct Stream<'a> {
    shared: &'a Shared,
    relations: Relations,
    /// The events of the transaction being read.
    open: Option<Vec<Incoming>>,
    committed_at: SystemTime,
}

impl Stream<'_> {
    fn take(&mut self, event: ReplicationEvent) {
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
