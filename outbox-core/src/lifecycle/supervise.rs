//! Runs one step, restarting it with backoff when it fails.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::Step;
use crate::Backoff;

/// A step that ran this long without failing starts its backoff afresh.
const HEALTHY_RUN: Duration = Duration::from_secs(30);

/// How a supervised step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ended {
    /// It returned `Ok(())` on its own.
    Finished,
    /// It stopped after cancellation.
    Cancelled,
}

pub(super) async fn supervise(
    name: String,
    step: Arc<dyn Step>,
    cancel: CancellationToken,
    backoff: Backoff,
) -> Ended {
    let mut failures = 0;
    loop {
        let started = Instant::now();
        let run = {
            let step = step.clone();
            let cancel = cancel.clone();
            tokio::spawn(async move { step.run(cancel).await })
        };
        let error = match run.await {
            Ok(Ok(())) if cancel.is_cancelled() => return Ended::Cancelled,
            Ok(Ok(())) => {
                tracing::info!(step = %name, "step finished");
                return Ended::Finished;
            }
            Ok(Err(e)) => crate::port::error_chain(&*e),
            Err(join) if join.is_panic() => "step panicked".to_owned(),
            Err(_) => return Ended::Cancelled,
        };
        if cancel.is_cancelled() {
            tracing::warn!(step = %name, error = %error, "step failed while shutting down");
            return Ended::Cancelled;
        }
        failures = if started.elapsed() >= HEALTHY_RUN {
            1
        } else {
            failures + 1
        };
        let delay = backoff.delay(failures);
        tracing::error!(step = %name, error = %error, restart_in = ?delay, "step failed; restarting");
        tokio::select! {
            () = cancel.cancelled() => return Ended::Cancelled,
            () = tokio::time::sleep(delay) => {}
        }
    }
}
