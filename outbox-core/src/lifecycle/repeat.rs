//! The loop of periodic steps (sweeper, cleaners).

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
pub async fn repeat<F, Fut, E>(
    what: &str,
    interval: Duration,
    cancel: &CancellationToken,
    mut tick: F,
) -> Result<(), StepError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), E>>,
    E: std::error::Error + Transient + Send + Sync + 'static,
{
    while !cancel.is_cancelled() {
        match tick().await {
            Ok(()) => {}
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
