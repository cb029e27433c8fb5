//! Feeding deliveries to the pipeline: at most `concurrency` at once, and
//! one at a time per ordering key where asked.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use futures::{Stream, StreamExt};
use tidings_core::{Acker, Codec, Delivery, InboxStore, SourceError};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::handler::Handler;
use crate::process::Pipeline;

/// Why a stream stopped being consumed.
#[derive(Debug)]
pub(crate) enum StreamEnd {
    /// Shutdown was asked for.
    Cancelled,
    /// The stream ended (the connection closed).
    Closed,
    /// The stream failed.
    Failed(SourceError),
}

/// Deliveries waiting behind a running one of the same key.
type Lanes<A> = Arc<Mutex<HashMap<String, VecDeque<Delivery<A>>>>>;

/// Consumes `stream` until it ends or `cancel` fires, then waits for the
/// running deliveries within the shutdown timeout. Deliveries not yet
/// started are dropped unsettled, so the broker redelivers them.
pub(crate) async fn consume<T, C, H, I, A, St>(
    pipeline: &Arc<Pipeline<T, C, H, I>>,
    mut stream: St,
    cancel: &CancellationToken,
) -> StreamEnd
where
    T: Send + 'static,
    C: Codec<T> + 'static,
    I: InboxStore,
    H: Handler<T, I::Tx>,
    A: Acker,
    St: Stream<Item = Result<Delivery<A>, SourceError>> + Unpin,
{
    let permits = Arc::new(Semaphore::new(pipeline.options.concurrency));
    let lanes: Lanes<A> = Arc::default();
    let mut tasks = JoinSet::new();
    let end = loop {
        let permit = tokio::select! {
            () = cancel.cancelled() => break StreamEnd::Cancelled,
            permit = permits.clone().acquire_owned() => permit.expect("semaphore never closes"),
        };
        let next = tokio::select! {
            () = cancel.cancelled() => break StreamEnd::Cancelled,
            next = stream.next() => next,
        };
        while tasks.try_join_next().is_some() {}
        let delivery = match next {
            None => break StreamEnd::Closed,
            Some(Err(e)) => break StreamEnd::Failed(e),
            Some(Ok(delivery)) => delivery,
        };
        let key = match pipeline.options.serialize_by_key {
            true => delivery.envelope().ordering_key.clone(),
            false => None,
        };
        let pipeline = pipeline.clone();
        match key {
            None => {
                tasks.spawn(async move {
                    pipeline.process(delivery).await;
                    drop(permit);
                });
            }
            Some(key) => {
                let mut waiting = lanes.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(queue) = waiting.get_mut(&key) {
                    queue.push_back(delivery);
                    continue;
                }
                waiting.insert(key.clone(), VecDeque::new());
                drop(waiting);
                let (lanes, cancel) = (lanes.clone(), cancel.clone());
                tasks.spawn(run_lane(pipeline, lanes, key, delivery, permit, cancel));
            }
        }
    };
    drain(tasks, pipeline.options.shutdown_timeout).await;
    end
}

/// Runs the deliveries of one key in arrival order, holding one permit.
async fn run_lane<T, C, H, I, A>(
    pipeline: Arc<Pipeline<T, C, H, I>>,
    lanes: Lanes<A>,
    key: String,
    first: Delivery<A>,
    permit: OwnedSemaphorePermit,
    cancel: CancellationToken,
) where
    T: Send + 'static,
    C: Codec<T> + 'static,
    I: InboxStore,
    H: Handler<T, I::Tx>,
    A: Acker,
{
    let mut next = Some(first);
    while let Some(delivery) = next {
        pipeline.process(delivery).await;
        let mut waiting = lanes.lock().unwrap_or_else(|p| p.into_inner());
        next = match cancel.is_cancelled() {
            true => None,
            false => waiting.get_mut(&key).and_then(VecDeque::pop_front),
        };
        if next.is_none() {
            waiting.remove(&key);
        }
    }
    drop(permit);
}

/// Waits for running deliveries; those still running at the deadline are
/// aborted, their transactions rolled back and deliveries left unsettled.
async fn drain(mut tasks: JoinSet<()>, timeout: std::time::Duration) {
    let all = async { while tasks.join_next().await.is_some() {} };
    if tokio::time::timeout(timeout, all).await.is_err() {
        tracing::warn!(
            running = tasks.len(),
            "handlers still running at the shutdown deadline; leaving them unsettled"
        );
        tasks.shutdown().await;
    }
}
