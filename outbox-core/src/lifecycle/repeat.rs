//! The loops of periodic steps (sweeper, cleaners).

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::StepError;
use crate::port::{Transient, error_chain};

/// Runs `tick` every `interval` until `cancel` fires. A transient failure is
/// logged and the next tick tries again; a permanent one ends the step with
/// it, so the plan restarts it with backoff.
///
/// # Errors
///
/// The first error of `tick` that is not transient, as a [`StepError`]; a
/// transient one is logged and retried at the next tick.
pub async fn repeat<F, Fut, T, E>(
    what: &str,
    interval: Duration,
    cancel: CancellationToken,
    mut tick: F,
) -> Result<(), StepError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: std::error::Error + Transient + Send + Sync + 'static,
{
    while !cancel.is_cancelled() {
        match tick().await {
            Ok(_) => {}
            Err(e) if e.is_transient() => {
                tracing::error!(step = what, error = %error_chain(&e), "periodic step failed; trying again next tick");
            }
            Err(e) => return Err(e.into()),
        }
        tokio::select! {
            () = cancel.cancelled() => {}
            () = tokio::time::sleep(interval) => {}
        }
    }
    Ok(())
}

/// Calls `purge` with `batch` as its limit until a call deletes fewer than
/// `batch`; returns how many it deleted in all. The cleaners of the outbox
/// and of the inbox delete this way, so no statement holds more than a
/// batch's worth of locks.
///
/// # Errors
///
/// The first error of `purge`; what earlier calls deleted stays deleted.
pub async fn purge_in_batches<F, Fut, E>(batch: usize, mut purge: F) -> Result<u64, E>
where
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = Result<u64, E>>,
{
    let mut deleted = 0;
    loop {
        let n = purge(batch).await?;
        deleted += n;
        if n < batch as u64 {
            return Ok(deleted);
        }
    }
}
