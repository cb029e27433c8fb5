//! Batches (`ConsumerOptions::max_batch`) on a real RabbitMQ queue with the
//! PostgreSQL inbox.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};

use sqlx::AssertSqlSafe;
use support::postgres_rabbitmq::{Order, World, apply, options, run_until};
use tidings_consumer::{Consumer, HandlerError, TxHandle, handler_fn};
use tidings_core::Message;
use tidings_postgres::PgContext;
use tidings_rabbitmq::QueueKind;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_commit_every_effect_once_through_duplicates_and_a_failed_statement() {
    let world = World::new(QueueKind::Quorum).await;
    let sent: Vec<_> = (0..200).map(|id| world.envelope(id)).collect();
    for envelope in &sent {
        world.publish(envelope).await;
    }
    for envelope in sent.iter().step_by(10) {
        world.publish(envelope).await;
    }
    // Order 13's first run breaks the transaction with a failing
    // statement, as a real handler's constraint violation would.
    let failed_once = Arc::new(AtomicBool::new(false));
    let sql = world.effect_sql();
    let handler = handler_fn({
        let failed_once = failed_once.clone();
        move |msg: Message<Order>, tx: TxHandle<PgContext<'static>>| {
            let (sql, failed_once) = (sql.clone(), failed_once.clone());
            async move {
                apply(&sql, &msg, &tx).await?;
                if msg.payload.id == 13 && !failed_once.swap(true, SeqCst) {
                    let mut ctx = tx.lock().await;
                    sqlx::query(AssertSqlSafe("select 1 / 0"))
                        .execute(ctx.tx())
                        .await
                        .map_err(HandlerError::transient)?;
                }
                Ok(())
            }
        }
    });
    let consumer = Consumer::new(world.source.clone(), world.queue, handler)
        .unwrap()
        .inbox(world.inbox())
        .options(options().concurrency(2).max_batch(8));
    let report = run_until(consumer, |_| async { world.effects().await.0 == 200 }).await;

    assert_eq!(
        world.effects().await,
        (200, 1),
        "an order lost or doubled: {report:?}"
    );
    assert!(failed_once.load(SeqCst), "order 13 never failed");
    assert!(
        report.batched > 0,
        "no delivery shared a transaction: {report:?}"
    );
    assert_eq!(report.processed, 200);
    world.drop().await;
}
