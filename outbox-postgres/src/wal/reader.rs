//! The task reading a store's slot into its window: one session per
//! connection, standing by while another relay holds the slot, stopping
//! for good when the slot may have skipped events.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use pgwire_replication::{Lsn, ReplicationClient};
use tidings_core::port::error_chain;
use tidings_core::{Backoff, StoreError};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::Shared;
use super::crashes::Crashes;
use super::outcomes::Failure;
use super::outcomes::write;
use super::stream::Stream;

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
    let crashes = Crashes::session_started(&shared.store).await?;
    if crashes.is_careful() {
        warn!(slot = %shared.tailing.slot, "the last session ended without moving the slot's \
            position: this one lists the events it hands out, to fail one that keeps \
            killing the relay");
    }
    *shared.crashes() = crashes;
    shared.window().restart(start);
    shared.active.store(true, Ordering::Release);
    info!(slot = %shared.tailing.slot, position = %Lsn::from_u64(start), "reading the slot");
    let mut stream = Stream::new(shared);
    let mut recorded = start;
    let mut tick = tokio::time::interval(shared.options.get_confirm_interval());
    let mut woken_for = None;
    let mut ticks: u32 = 0;
    loop {
        // One look at the window per event read.
        let (full, due) = {
            let window = shared.window();
            let options = &shared.options;
            let full = window.len() >= options.get_max_window()
                || window.bytes() >= options.get_max_window_bytes();
            (
                full,
                window.next_due().filter(|&due| Some(due) != woken_for),
            )
        };
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
        // Another relay reads it: standing by, without a connection whose
        // refusal the replication client would report as an error.
        (Some(state), _) if state.active => Err(Stop::Standby),
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
