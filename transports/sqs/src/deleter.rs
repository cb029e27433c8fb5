//! Acks as `DeleteMessageBatch` calls: deletes asked for while a call is
//! under way are sent together in the next one.

use std::time::Duration;

use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::DeleteMessageBatchRequestEntry;
use tokio::sync::{mpsc, oneshot};

use crate::batching::MAX_BATCH_ENTRIES;
use crate::error::{Failure, Kind, call, entry_failure};

/// Deletes received messages of one queue, batching where it can.
///
/// A background task takes the requests in order; each call carries every
/// request waiting at that moment, up to ten. It ends when the last handle
/// is dropped.
#[derive(Debug, Clone)]
pub(crate) struct Deleter {
    requests: mpsc::UnboundedSender<Request>,
}

#[derive(Debug)]
struct Request {
    receipt: String,
    reply: oneshot::Sender<Result<(), Failure>>,
}

impl Deleter {
    /// Starts the task for the queue at `url`.
    pub(crate) fn start(client: Client, url: String, timeout: Duration) -> Self {
        let (requests, queue) = mpsc::unbounded_channel();
        tokio::spawn(run(queue, client, url, timeout));
        Self { requests }
    }

    /// Deletes the message received with `receipt`.
    pub(crate) async fn delete(&self, receipt: String) -> Result<(), Failure> {
        let (reply, answer) = oneshot::channel();
        self.requests
            .send(Request { receipt, reply })
            .map_err(|_| Failure::new(Kind::Other, "the delete task has stopped"))?;
        answer
            .await
            .map_err(|_| Failure::new(Kind::Other, "the delete task has stopped"))?
    }
}

async fn run(
    mut queue: mpsc::UnboundedReceiver<Request>,
    client: Client,
    url: String,
    timeout: Duration,
) {
    while let Some(first) = queue.recv().await {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH_ENTRIES {
            match queue.try_recv() {
                Ok(request) => batch.push(request),
                Err(_) => break,
            }
        }
        delete_batch(&client, &url, timeout, batch).await;
    }
}

async fn delete_batch(client: &Client, url: &str, timeout: Duration, batch: Vec<Request>) {
    let entries = batch
        .iter()
        .enumerate()
        .filter_map(|(id, request)| {
            DeleteMessageBatchRequestEntry::builder()
                .id(id.to_string())
                .receipt_handle(&request.receipt)
                .build()
                .ok()
        })
        .collect();
    let request = client
        .delete_message_batch()
        .queue_url(url)
        .set_entries(Some(entries))
        .send();
    let output = match call(timeout, request).await {
        Ok(output) => output,
        Err(failure) => {
            for request in batch {
                let _ = request.reply.send(Err(failure.copy()));
            }
            return;
        }
    };
    let mut results: Vec<Option<Result<(), Failure>>> = batch.iter().map(|_| None).collect();
    for ok in output.successful() {
        if let Some(slot) = entry_slot(&mut results, ok.id()) {
            *slot = Some(Ok(()));
        }
    }
    for failed in output.failed() {
        if let Some(slot) = entry_slot(&mut results, failed.id()) {
            let message = failed.message().unwrap_or_default();
            *slot = Some(Err(entry_failure(
                failed.code(),
                message,
                failed.sender_fault(),
            )));
        }
    }
    for (request, result) in batch.into_iter().zip(results) {
        let result = result
            .unwrap_or_else(|| Err(Failure::new(Kind::Other, "sqs answered without a result")));
        let _ = request.reply.send(result);
    }
}

/// The result of the batch entry `id` names: entries are numbered by their
/// place in the batch.
fn entry_slot<'a, T>(results: &'a mut [Option<T>], id: &str) -> Option<&'a mut Option<T>> {
    id.parse::<usize>().ok().and_then(|i| results.get_mut(i))
}
