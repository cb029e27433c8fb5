//! Feeding deliveries to the pipeline: at most `concurrency` batches at
//! once, and one at a time per ordering key where asked.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use futures::{FutureExt, Stream, StreamExt};
use tidings_core::{Acker, Delivery, SourceError};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::KeyOrder;
use crate::parts::Parts;
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

/// Deliveries waiting behind a running batch that holds their key.
type Lanes<A> = Arc<Mutex<HashMap<String, VecDeque<Delivery<A>>>>>;

/// Deliveries run together, and the ordering keys they hold.
struct Batch<A> {
    deliveries: Vec<Delivery<A>>,
    keys: Vec<String>,
}

/// Consumes `stream` until it ends or `cancel` fires, then waits for the
/// running deliveries within the shutdown timeout. Deliveries not yet
/// started are dropped unsettled, so the broker redelivers them.
///
/// Each free handler slot takes the next delivery and, up to
/// `max_batch`, those already waiting behind it. A delivery whose key is
/// held by a running batch queues behind it instead.
pub(crate) async fn consume<P, A, St>(
    pipeline: &Arc<Pipeline<P>>,
    mut stream: St,
    cancel: &CancellationToken,
) -> StreamEnd
where
    P: Parts,
    A: Acker,
    St: Stream<Item = Result<Delivery<A>, SourceError>> + Unpin,
{
    let options = &pipeline.options;
    let permits = Arc::new(Semaphore::new(options.concurrency));
    let lanes: Lanes<A> = Arc::default();
    let mut tasks = JoinSet::new();
    let end = loop {
        let permit = tokio::select! {
            () = cancel.cancelled() => break StreamEnd::Cancelled,
            permit = permits.clone().acquire_owned() => permit.expect("semaphore never closes"),
        };
        let mut next = tokio::select! {
            () = cancel.cancelled() => break StreamEnd::Cancelled,
            next = stream.next() => next,
        };
        while tasks.try_join_next().is_some() {}
        let mut batch = Batch {
            deliveries: Vec::new(),
            keys: Vec::new(),
        };
        let end = loop {
            match next {
                None => break Some(StreamEnd::Closed),
                Some(Err(e)) => break Some(StreamEnd::Failed(e)),
                Some(Ok(delivery)) => {
                    let order = pipeline.options_for(delivery.envelope()).key_order;
                    admit(&lanes, order != KeyOrder::Unordered, &mut batch, delivery);
                }
            }
            if batch.deliveries.len() >= options.max_batch {
                break None;
            }
            match stream.next().now_or_never() {
                Some(ready) => next = ready,
                None => break None,
            }
        };
        if !batch.deliveries.is_empty() {
            let (pipeline, lanes, cancel) = (pipeline.clone(), lanes.clone(), cancel.clone());
            tasks.spawn(run_batch(pipeline, lanes, batch, permit, cancel));
        }
        if let Some(end) = end {
            break end;
        }
    };
    drain(tasks, options.shutdown_timeout).await;
    end
}

/// Adds `delivery` to `batch`, or queues it behind the batch holding its
/// key.
fn admit<A: Acker>(lanes: &Lanes<A>, by_key: bool, batch: &mut Batch<A>, delivery: Delivery<A>) {
    let key = match by_key {
        true => delivery.envelope().ordering_key.clone(),
        false => None,
    };
    if let Some(key) = key {
        let mut waiting = lanes.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(queue) = waiting.get_mut(&key) {
            queue.push_back(delivery);
            return;
        }
        waiting.insert(key.clone(), VecDeque::new());
        batch.keys.push(key);
    }
    batch.deliveries.push(delivery);
}

/// Runs a batch, then the deliveries queued behind its keys, holding one
/// permit throughout.
async fn run_batch<P: Parts, A: Acker>(
    pipeline: Arc<Pipeline<P>>,
    lanes: Lanes<A>,
    mut batch: Batch<A>,
    permit: OwnedSemaphorePermit,
    cancel: CancellationToken,
) {
    loop {
        pipeline.process_batch(batch.deliveries).await;
        if batch.keys.is_empty() {
            break;
        }
        batch = refill(&lanes, batch.keys, pipeline.options.max_batch, &cancel);
        if batch.deliveries.is_empty() {
            break;
        }
    }
    drop(permit);
}

/// The next batch from the deliveries queued behind `keys`, taken from the
/// keys in turn so that each keeps its arrival order. Keys with nothing
/// running or queued are released; on shutdown all are, and what was
/// queued is left unsettled.
fn refill<A>(
    lanes: &Lanes<A>,
    keys: Vec<String>,
    max: usize,
    cancel: &CancellationToken,
) -> Batch<A> {
    let mut waiting = lanes.lock().unwrap_or_else(|p| p.into_inner());
    let mut deliveries = Vec::new();
    let mut running = vec![false; keys.len()];
    while !cancel.is_cancelled() && deliveries.len() < max {
        let before = deliveries.len();
        for (key, running) in keys.iter().zip(running.iter_mut()) {
            if deliveries.len() >= max {
                break;
            }
            if let Some(delivery) = waiting.get_mut(key).and_then(VecDeque::pop_front) {
                deliveries.push(delivery);
                *running = true;
            }
        }
        if deliveries.len() == before {
            break;
        }
    }
    let mut held = Vec::new();
    for (key, running) in keys.into_iter().zip(running) {
        let queued = waiting.get(&key).is_some_and(|queue| !queue.is_empty());
        if !cancel.is_cancelled() && (running || queued) {
            held.push(key);
        } else {
            waiting.remove(&key);
        }
    }
    Batch {
        deliveries,
        keys: held,
    }
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
