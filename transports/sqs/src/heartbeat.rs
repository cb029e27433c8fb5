//! Keeping a received message invisible while it waits or its handler runs.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::context::QueueContext;
use crate::error::Kind;

/// The shortest time between two extensions.
const MIN_INTERVAL: Duration = Duration::from_millis(500);

/// Extends one message's visibility timeout every third of the timeout,
/// by one timeout, until stopped or dropped. Extending before half the
/// timeout is gone leaves room for a slow or retried call.
///
/// Dropping it stops the extensions; [`stop`](Self::stop) also waits for an
/// extension under way, so a settlement sent afterwards is never overtaken
/// by it.
#[derive(Debug)]
pub(crate) struct Heartbeat {
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl Heartbeat {
    /// No extensions.
    pub(crate) fn disabled() -> Self {
        Self {
            stop: None,
            task: None,
        }
    }

    /// Starts extending the message received with `receipt`.
    pub(crate) fn start(ctx: Arc<QueueContext>, receipt: Arc<str>, message_id: String) -> Self {
        if !ctx.options.heartbeat || ctx.visibility.is_zero() {
            return Self::disabled();
        }
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(beat(ctx, receipt, message_id, stopped));
        Self {
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// Stops extending and waits for an extension under way.
    pub(crate) async fn stop(mut self) {
        drop(self.stop.take());
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

async fn beat(
    ctx: Arc<QueueContext>,
    receipt: Arc<str>,
    message_id: String,
    mut stopped: oneshot::Receiver<()>,
) {
    let interval = (ctx.visibility / 3).max(MIN_INTERVAL);
    loop {
        tokio::select! {
            biased;
            _ = &mut stopped => return,
            () = tokio::time::sleep(interval) => {}
        }
        match ctx.change_visibility(&receipt, ctx.visibility).await {
            Ok(()) => tracing::trace!(
                messaging.system = "aws_sqs",
                messaging.destination.name = ctx.name(),
                messaging.message.id = %message_id,
                "visibility extended"
            ),
            Err(failure) if matches!(failure.kind, Kind::ReceiptInvalid | Kind::QueueMissing) => {
                tracing::info!(
                    messaging.system = "aws_sqs",
                    messaging.destination.name = ctx.name(),
                    messaging.message.id = %message_id,
                    error = %failure.describe(),
                    "message is no longer in flight; heartbeat stopped"
                );
                return;
            }
            Err(failure) => tracing::warn!(
                messaging.system = "aws_sqs",
                messaging.destination.name = ctx.name(),
                messaging.message.id = %message_id,
                error = %failure.describe(),
                "cannot extend visibility"
            ),
        }
    }
}
