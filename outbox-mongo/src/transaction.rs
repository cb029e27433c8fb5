//! The transaction helper: runs a closure in a fresh context and commits,
//! retrying as MongoDB recommends.

use std::time::Duration;

use futures::future::BoxFuture;
use tidings_core::{Backoff, StoreError};
use tokio::time::Instant;
use tracing::{debug, info, instrument, warn};

use crate::error::{
    CommitError, TRANSIENT_TRANSACTION_ERROR, UNKNOWN_TRANSACTION_COMMIT_RESULT, has_label,
};
use crate::{MongoContext, MongoOutboxStore};

/// The pauses before the second and later reruns of a conflicting
/// transaction: from 1–2 ms, doubling up to 100 ms, jittered so that
/// transactions which conflicted with each other spread out. The first
/// rerun follows at once, as MongoDB's drivers run theirs: most conflicts
/// are a single race that a second run wins.
const RERUN_PAUSES: Backoff = Backoff::new(Duration::from_millis(2), Duration::from_millis(100));

impl MongoOutboxStore {
    /// Runs `work` in a fresh transaction and commits it with the events it
    /// staged.
    ///
    /// When the closure or the insert of the staged events fails with a
    /// `TransientTransactionError` (a write conflict, a primary stepping
    /// down) or another conflict with a concurrent transaction, the
    /// transaction is aborted and the whole closure runs again; a
    /// commit failing with `UnknownTransactionCommitResult` is retried on
    /// its own. Retries stop after
    /// [`transaction_timeout`](crate::MongoOutboxOptions::transaction_timeout).
    /// The closure may run several times, so it should do nothing outside
    /// the transaction it cannot repeat. End it with
    /// [`CommitError::abandon`] to abort without a retry.
    ///
    /// # Errors
    ///
    /// [`CommitError::Abandoned`] when the closure abandons the
    /// transaction; the closure's own error otherwise; the errors of
    /// [`MongoContext::commit`] for the insert and the commit. A conflict
    /// is returned only once reruns have gone on past the transaction
    /// timeout.
    ///
    /// ```no_run
    /// # use futures::FutureExt;
    /// # use mongodb::bson::doc;
    /// # use tidings_core::OutboxSpec;
    /// # static EVENTS: OutboxSpec<u64> = OutboxSpec::json("order-events").destination("orders");
    /// # async fn run(store: tidings_mongo::MongoOutboxStore) -> Result<(), tidings_mongo::CommitError> {
    /// let orders = store.database().collection("orders");
    /// let id = store
    ///     .transaction(|ctx| {
    ///         let orders = orders.clone();
    ///         async move {
    ///             orders.insert_one(doc! { "_id": 42 }).session(ctx.session()).await?;
    ///             ctx.outbox().stage(&EVENTS, "order.placed", &42)?;
    ///             Ok(42)
    ///         }
    ///         .boxed()
    ///     })
    ///     .await?;
    /// # Ok(())
    /// # }
    /// ```
    // A closure abandoning its transaction is the caller's decision, not a
    // failure of the store: logged at info.
    #[instrument(skip_all, fields(db.system = "mongodb"), err(level = "info"))]
    pub async fn transaction<T, F>(&self, mut work: F) -> Result<T, CommitError>
    where
        F: for<'c> FnMut(&'c mut MongoContext) -> BoxFuture<'c, Result<T, CommitError>> + Send,
        T: Send,
    {
        let deadline = Instant::now() + self.options().get_transaction_timeout();
        let mut reruns_so_far = 0;
        loop {
            let mut ctx = self.begin().await?;
            let ran = match work(&mut ctx).await {
                Ok(value) => ctx.flush().await.map(|_| value),
                Err(e) => Err(e),
            };
            let outcome = match ran {
                Ok(value) => commit(ctx, deadline).await.map(|()| value),
                Err(e) => {
                    if let Err(abort) = ctx.rollback().await {
                        warn!(error = %abort, "aborting a failed transaction failed");
                    }
                    Err(e)
                }
            };
            match outcome {
                Err(e) if reruns(&e) && Instant::now() < deadline => {
                    let pause = match reruns_so_far {
                        0 => Duration::ZERO,
                        n => RERUN_PAUSES.delay(n),
                    };
                    reruns_so_far += 1;
                    debug!(error = %e, retry_in = ?pause, "transaction conflicted; running it again");
                    tokio::time::sleep(pause).await;
                }
                other => return other,
            }
        }
    }
}

/// Whether running the transaction again may succeed: the driver says so
/// with its label, or a concurrent transaction conflicted (a write conflict,
/// or the same event staged by both).
fn reruns(error: &CommitError) -> bool {
    has_label(error, TRANSIENT_TRANSACTION_ERROR)
        || matches!(error, CommitError::Store(StoreError::Conflict(_)))
}

/// Commits, retrying a commit whose result is unknown.
async fn commit(mut ctx: MongoContext, deadline: Instant) -> Result<(), CommitError> {
    loop {
        match ctx.session().commit_transaction().await {
            Ok(()) => return Ok(()),
            Err(e)
                if e.contains_label(UNKNOWN_TRANSACTION_COMMIT_RESULT)
                    && Instant::now() < deadline =>
            {
                info!(error = %e, "commit result unknown; committing again");
            }
            Err(e) => return Err(e.into()),
        }
    }
}
