//! Running background steps (relay, sweeper, cleaner, consumers) under one
//! cancellation token, restarting failed ones and shutting all down in
//! order.
//!
//! ```no_run
//! # use tidings_core::lifecycle::{LifecyclePlan, step_fn};
//! # async fn example() -> Result<(), tidings_core::lifecycle::LifecycleError> {
//! LifecyclePlan::new()
//!     .step("relay", step_fn(|cancel| async move { cancel.cancelled().await; Ok(()) }))
//!     .run_until(async { tokio::signal::ctrl_c().await.ok(); })
//!     .await
//! # }
//! ```

mod repeat;
mod step;
mod supervise;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use repeat::{purge_in_batches, repeat};
pub use step::{Step, StepError, StepFn, step_fn};
use supervise::{Ended, supervise};

use crate::Backoff;

/// Steps that did not stop within the shutdown deadline.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("steps did not stop within the shutdown deadline: {}", steps.join(", "))]
pub struct LifecycleError {
    /// Their names.
    pub steps: Vec<String>,
}

/// Several named steps added at once, such as a store's
/// [`Relays`](crate::relay::Relays).
pub trait IntoSteps {
    /// The steps with their names, in the order they start.
    fn into_steps(self) -> Vec<(String, Arc<dyn Step>)>;
}

/// Named background steps run together.
pub struct LifecyclePlan {
    steps: Vec<(String, Arc<dyn Step>)>,
    restart_backoff: Backoff,
    shutdown_timeout: Duration,
}

impl std::fmt::Debug for LifecyclePlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<_> = self.steps.iter().map(|(n, _)| n).collect();
        f.debug_struct("LifecyclePlan")
            .field("steps", &names)
            .field("restart_backoff", &self.restart_backoff)
            .field("shutdown_timeout", &self.shutdown_timeout)
            .finish()
    }
}

impl Default for LifecyclePlan {
    fn default() -> Self {
        Self::new()
    }
}

impl LifecyclePlan {
    /// Default restart backoff: from 1 s, capped at 30 s.
    pub const DEFAULT_RESTART_BACKOFF: Backoff =
        Backoff::new(Duration::from_secs(1), Duration::from_secs(30));
    /// Default time steps get to stop after the signal.
    pub const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);

    /// An empty plan.
    pub fn new() -> Self {
        Self {
            steps: Vec::new(),
            restart_backoff: Self::DEFAULT_RESTART_BACKOFF,
            shutdown_timeout: Self::DEFAULT_SHUTDOWN_TIMEOUT,
        }
    }

    /// Adds a step. Steps start in the order added and stop in reverse.
    pub fn step(mut self, name: impl Into<String>, step: impl Step) -> Self {
        self.steps.push((name.into(), Arc::new(step)));
        self
    }

    /// Adds several steps, in their order.
    pub fn steps(mut self, steps: impl IntoSteps) -> Self {
        self.steps.extend(steps.into_steps());
        self
    }

    /// The names of the steps, in the order they start.
    pub fn step_names(&self) -> Vec<&str> {
        self.steps.iter().map(|(name, _)| name.as_str()).collect()
    }

    /// Runs every step until `signal` completes (or every step finishes on
    /// its own), then stops them in reverse order within the deadline.
    ///
    /// # Errors
    ///
    /// [`LifecycleError`], naming them, when steps are still running once the
    /// shutdown timeout has passed.
    pub async fn run_until(self, signal: impl Future<Output = ()>) -> Result<(), LifecycleError> {
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        let run = self.run(cancel);
        tokio::pin!(run);
        tokio::select! {
            result = &mut run => result,
            () = signal => {
                trigger.cancel();
                run.await
            }
        }
    }

    /// Runs every step until `cancel` fires (or every step finishes), then
    /// stops them in reverse order within the deadline.
    ///
    /// # Errors
    ///
    /// [`LifecycleError`], naming them, when steps are still running once the
    /// shutdown timeout has passed.
    pub async fn run(self, cancel: CancellationToken) -> Result<(), LifecycleError> {
        let mut running: Vec<(String, CancellationToken, JoinHandle<Ended>)> = Vec::new();
        for (name, step) in self.steps {
            tracing::info!(step = %name, "starting step");
            let token = CancellationToken::new();
            let task = tokio::spawn(supervise(
                name.clone(),
                step,
                token.clone(),
                self.restart_backoff,
            ));
            running.push((name, token, task));
        }
        tokio::select! {
            () = all_finished(&running) => return Ok(()),
            () = cancel.cancelled() => {}
        }
        let deadline = tokio::time::Instant::now() + self.shutdown_timeout;
        let mut late = Vec::new();
        for (name, token, task) in running.into_iter().rev() {
            tracing::info!(step = %name, "stopping step");
            token.cancel();
            if tokio::time::timeout_at(deadline, task).await.is_err() {
                tracing::error!(step = %name, "step did not stop in time");
                late.push(name);
            }
        }
        if late.is_empty() {
            Ok(())
        } else {
            Err(LifecycleError { steps: late })
        }
    }
}

crate::settings!(LifecyclePlan {
    /// How long to wait before restarting a failed step; default
    /// [`DEFAULT_RESTART_BACKOFF`](LifecyclePlan::DEFAULT_RESTART_BACKOFF).
    restart_backoff(backoff: Backoff), get_restart_backoff: Backoff;
    /// How long all steps together get to stop after the signal; default
    /// [`DEFAULT_SHUTDOWN_TIMEOUT`](LifecyclePlan::DEFAULT_SHUTDOWN_TIMEOUT).
    shutdown_timeout(timeout: Duration), get_shutdown_timeout: Duration;
});

/// Completes once every step has finished on its own.
async fn all_finished(running: &[(String, CancellationToken, JoinHandle<Ended>)]) {
    const CHECK_EVERY: Duration = Duration::from_millis(50);
    while !running.iter().all(|(_, _, task)| task.is_finished()) {
        tokio::time::sleep(CHECK_EVERY).await;
    }
}
