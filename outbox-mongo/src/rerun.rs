//! Short internal transactions (per-key claims, settlements), run again
//! when they conflict with a concurrent writer.

use std::time::Duration;

use futures::future::BoxFuture;
use mongodb::error::Result as MongoResult;
use mongodb::{Client, ClientSession};
use tracing::debug;

use crate::error::{TRANSIENT_TRANSACTION_ERROR, UNKNOWN_TRANSACTION_COMMIT_RESULT};

/// How often a commit whose result is unknown is sent again.
const COMMIT_ATTEMPTS: u32 = 3;

/// Runs `work` in a transaction and commits it, up to `attempts` times
/// while it fails with a `TransientTransactionError`, pausing a random
/// few milliseconds between runs so racing relays spread out. Returns the
/// last error when every run failed.
pub(crate) async fn retrying<T, F>(client: &Client, attempts: u32, mut work: F) -> MongoResult<T>
where
    F: for<'s> FnMut(&'s mut ClientSession) -> BoxFuture<'s, MongoResult<T>> + Send,
    T: Send,
{
    let mut session = client.start_session().await?;
    let mut attempt = 1;
    loop {
        session.start_transaction().await?;
        let result = match work(&mut session).await {
            Ok(value) => commit(&mut session).await.map(|()| value),
            Err(e) => {
                // The server has usually aborted already; this ends the
                // session's transaction state too.
                let _ = session.abort_transaction().await;
                Err(e)
            }
        };
        match result {
            Err(e) if e.contains_label(TRANSIENT_TRANSACTION_ERROR) && attempt < attempts => {
                debug!(attempt, error = %e, "transaction conflicted; running it again");
                let pause = Duration::from_millis(jitter_millis(attempt));
                tokio::time::sleep(pause).await;
                attempt += 1;
            }
            other => return other,
        }
    }
}

async fn commit(session: &mut ClientSession) -> MongoResult<()> {
    let mut attempt = 1;
    loop {
        match session.commit_transaction().await {
            Err(e)
                if e.contains_label(UNKNOWN_TRANSACTION_COMMIT_RESULT)
                    && attempt < COMMIT_ATTEMPTS =>
            {
                attempt += 1;
            }
            other => return other,
        }
    }
}

/// A pause of up to 5 ms per attempt so far, from the bytes of a fresh
/// random UUID.
fn jitter_millis(attempt: u32) -> u64 {
    let random = u64::from(uuid::Uuid::new_v4().as_bytes()[0]);
    random % (5 * u64::from(attempt)) + 1
}
