//! A background step: something the plan runs until it is cancelled.

use std::future::Future;

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::BoxError;

/// A step's failure; the plan restarts the step with backoff.
pub type StepError = BoxError;

/// A long-running background task: the relay, a sweeper, a consumer.
///
/// `run` works until `cancel` fires, then lets work in flight finish and
/// returns `Ok(())`. Returning an error (or panicking) makes the plan run it
/// again after a backoff; returning `Ok(())` before cancellation means the
/// step is done.
pub trait Step: Send + Sync + 'static {
    /// Runs the step until `cancel` fires.
    ///
    /// # Errors
    ///
    /// A [`StepError`] when the step fails and should be run again after a
    /// backoff.
    fn run(&self, cancel: CancellationToken) -> BoxFuture<'_, Result<(), StepError>>;
}

/// A shared step, so its owner can still read it (a consumer's report,
/// say) while the plan runs it.
impl<S: Step> Step for std::sync::Arc<S> {
    fn run(&self, cancel: CancellationToken) -> BoxFuture<'_, Result<(), StepError>> {
        (**self).run(cancel)
    }
}

/// A step made of a closure returning a future.
///
/// ```
/// use tidings_core::lifecycle::{step_fn, LifecyclePlan};
///
/// let plan = LifecyclePlan::new().step("heartbeat", step_fn(|cancel| async move {
///     cancel.cancelled().await;
///     Ok(())
/// }));
/// ```
pub fn step_fn<F, Fut>(f: F) -> StepFn<F>
where
    F: Fn(CancellationToken) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), StepError>> + Send + 'static,
{
    StepFn(f)
}

/// The step [`step_fn`] builds.
#[derive(Debug, Clone)]
pub struct StepFn<F>(F);

impl<F, Fut> Step for StepFn<F>
where
    F: Fn(CancellationToken) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), StepError>> + Send + 'static,
{
    fn run(&self, cancel: CancellationToken) -> BoxFuture<'_, Result<(), StepError>> {
        (self.0)(cancel).boxed()
    }
}
