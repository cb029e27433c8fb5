//! How a handler's database errors are read, on PostgreSQL and RabbitMQ.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};

use sqlx::AssertSqlSafe;
use support::postgres_rabbitmq::{Order, World, options, run_until};
use tidings_consumer::{Consumer, ConsumerReport, HandlerError, TxHandle, handler_fn};
use tidings_core::Message;
use tidings_postgres::PgContext;
use tidings_rabbitmq::QueueKind;

/// Runs a consumer over one order whose effect row already exists, with a
/// handler that inserts it again without `on conflict`: a unique
/// violation. `explicit` wraps the error in `HandlerError::transient`;
/// otherwise `?` converts it. Returns the handler's calls and the report.
async fn duplicate_insert(classify: bool, explicit: bool) -> (u32, ConsumerReport) {
    let world = World::new(QueueKind::Quorum).await;
    let table = world.effect_sql();
    let insert = table[..table.find(" on conflict").unwrap()].to_owned();
    world.publish(&world.envelope(1)).await;
    sqlx::query(AssertSqlSafe(insert.clone()))
        .bind(1)
        .execute(world.store.pool())
        .await
        .unwrap();
    let calls = Arc::new(AtomicU32::new(0));
    let handler = handler_fn({
        let calls = calls.clone();
        move |msg: Message<Order>, tx: TxHandle<PgContext<'static>>| {
            let (insert, calls) = (insert.clone(), calls.clone());
            async move {
                calls.fetch_add(1, SeqCst);
                let mut ctx = tx.lock().await;
                let done = sqlx::query(AssertSqlSafe(insert))
                    .bind(i64::from(msg.payload.id))
                    .execute(ctx.tx())
                    .await;
                match explicit {
                    true => done.map_err(HandlerError::transient)?,
                    false => done?,
                };
                Ok(())
            }
        }
    });
    let consumer = Consumer::new(world.source.clone(), world.queue, handler)
        .unwrap()
        .inbox(world.inbox())
        .options(
            options()
                .attempts(2)
                .max_deliveries(2)
                .classify_errors(classify),
        );
    let report = run_until(consumer, |r| async move { r.parked == 1 }).await;
    world.drop().await;
    (calls.load(SeqCst), report)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_constraint_violation_returned_through_question_mark_is_parked_at_once() {
    let (calls, report) = duplicate_insert(true, false).await;
    assert_eq!((calls, report.parked, report.failed), (1, 1, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_classification_a_constraint_violation_is_retried() {
    let (calls, report) = duplicate_insert(false, false).await;
    assert_eq!(report.parked, 1);
    assert!(calls >= 4, "two deliveries of two attempts, ran {calls}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_the_handler_calls_transient_stays_transient() {
    let (calls, report) = duplicate_insert(true, true).await;
    assert_eq!(report.parked, 1);
    assert!(calls >= 4, "two deliveries of two attempts, ran {calls}");
}
