//! Running a fixed amount of work across concurrent clients.

use std::future::Future;
use std::time::{Duration, Instant};

use futures::future::try_join_all;

/// Runs `op(i)` for every `i` in `0..total`, spread over `clients` tasks
/// each doing its share in turn; returns how long all took.
pub(crate) async fn run_clients<F, Fut>(
    clients: usize,
    total: usize,
    op: F,
) -> anyhow::Result<Duration>
where
    F: Fn(usize) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = anyhow::Result<()>> + Send,
{
    let started = Instant::now();
    let tasks = (0..clients).map(|client| {
        let op = op.clone();
        tokio::spawn(async move {
            let mut i = client;
            while i < total {
                op(i).await?;
                i += clients;
            }
            Ok::<_, anyhow::Error>(())
        })
    });
    for result in try_join_all(tasks).await? {
        result?;
    }
    Ok(started.elapsed())
}
