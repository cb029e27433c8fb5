//! Each message's effect once: duplicates, failures and poison.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};

use bytes::Bytes;
use tidings_consumer::{HandlerError, TxHandle, handler_fn};
use tidings_core::{CausalContext, Cause, Message, OutboxStore, Requeue};

use super::world::run_until;
use super::world::{
    ConsumerWorld, Effects, Order, WorldTx, answering, consumer, counting, options, order,
};

const ONCE: Effects = Effects { orders: 1, most: 1 };

/// One message delivered three times has its effect once; the copies are
/// acked as duplicates, or, through a stored inbox, stored once and so
/// never handled.
pub async fn a_message_delivered_three_times_has_its_effect_once<W: ConsumerWorld>(world: &Arc<W>) {
    let sent = order(world.as_ref(), 1, None);
    for _ in 0..3 {
        world.publish(&sent).await;
    }
    let stored = world.kept().is_some();
    let consumer = consumer(world.as_ref(), counting(world), options());
    let report = run_until::<W, _, _, _>(consumer, |report| async move {
        match stored {
            false => report.processed + report.duplicates >= 3,
            // The broker has nothing left once all three are stored.
            true => report.processed >= 1,
        }
    })
    .await;
    assert_eq!(world.effects().await, ONCE);
    let duplicates = if stored { 0 } else { 2 };
    assert_eq!((report.processed, report.duplicates), (1, duplicates));
}

/// A handler that fails leaves none of its writes; the redelivery that
/// succeeds commits them once.
pub async fn a_failing_handler_leaves_nothing_and_succeeds_on_redelivery<W: ConsumerWorld>(
    world: &Arc<W>,
) {
    world.publish(&order(world.as_ref(), 7, None)).await;
    let calls = Arc::new(AtomicU32::new(0));
    let handler = answering(world, &calls, |call| match call {
        0 | 1 => Err(HandlerError::transient("downstream hiccup")),
        _ => Ok(()),
    });
    let consumer = consumer(world.as_ref(), handler, options().attempts(1));
    let report =
        run_until::<W, _, _, _>(consumer, |report| async move { report.processed == 1 }).await;
    assert_eq!(
        world.effects().await,
        ONCE,
        "a failed attempt left its write"
    );
    assert_eq!((report.failed, report.processed), (2, 1));
}

/// A message that always fails is parked after `max_deliveries` runs, an
/// undecodable one at once, and neither holds up the messages behind.
pub async fn poison_is_parked_and_does_not_block_the_queue<W: ConsumerWorld>(world: &Arc<W>) {
    world.publish(&order(world.as_ref(), 666, None)).await;
    let mut garbage = order(world.as_ref(), 0, None);
    garbage.payload = Bytes::from_static(b"{\"id\": \"not a number\"}");
    world.publish(&garbage).await;
    for id in 1..=5 {
        world.publish(&order(world.as_ref(), id, None)).await;
    }
    let poison_runs = Arc::new(AtomicU32::new(0));
    let handler = handler_fn({
        let (world, poison_runs) = (world.clone(), poison_runs.clone());
        move |msg: Message<Order>, tx: TxHandle<WorldTx<W>>| {
            let (world, poison_runs) = (world.clone(), poison_runs.clone());
            async move {
                assert_ne!(
                    msg.payload.id, 0,
                    "an undecodable payload reached the handler"
                );
                if msg.payload.id == 666 {
                    poison_runs.fetch_add(1, SeqCst);
                    return Err(HandlerError::transient("always fails"));
                }
                world.apply(&tx, msg.payload.id).await
            }
        }
    });
    let consumer = consumer(
        world.as_ref(),
        handler,
        options().attempts(1).max_deliveries(3),
    );
    let report = run_until::<W, _, _, _>(consumer, |report| {
        let world = world.clone();
        async move { report.parked == 2 && world.effects().await.orders == 5 }
    })
    .await;
    assert_eq!(world.effects().await, Effects { orders: 5, most: 1 });
    assert_eq!(report.parked, 2);
    // A stored inbox parks past its claims instead of max_deliveries.
    let runs = world.kept().map_or(3, |kept| kept.get_max_claims());
    assert_eq!(
        poison_runs.load(SeqCst),
        runs,
        "the poison ran other than max_deliveries times"
    );
}

/// A permanent error parks the message at once, without a retry, and
/// leaves neither the handler's writes nor the inbox mark.
pub async fn a_permanent_error_parks_at_once_and_leaves_nothing<W: ConsumerWorld>(world: &Arc<W>) {
    let sent = order(world.as_ref(), 7, None);
    world.publish(&sent).await;
    let calls = Arc::new(AtomicU32::new(0));
    let handler = answering(world, &calls, |_| {
        Err(HandlerError::permanent("card declined"))
    });
    let failing = consumer(world.as_ref(), handler, options());
    let report = run_until::<W, _, _, _>(failing, |report| async move { report.parked == 1 }).await;
    assert_eq!((report.parked, report.processed), (1, 0));
    assert_eq!(calls.load(SeqCst), 1, "a permanent error was retried");
    assert_eq!(world.effects().await, Effects { orders: 0, most: 0 });
    // The mark went with the writes: the same event, sent again (through a
    // stored inbox, its failed row requeued), is fresh.
    send_again(world.as_ref(), &sent).await;
    let again = consumer(world.as_ref(), counting(world), options());
    run_until::<W, _, _, _>(again, |report| async move { report.processed == 1 }).await;
    assert_eq!(world.effects().await, ONCE);
}

/// What a handler stages is caused by the message it handles: its
/// transaction carries the message as its cause during the handler, one
/// delivery at a time and in batches, whatever the store.
pub async fn a_handler_stages_under_its_message_as_cause<W: ConsumerWorld>(world: &Arc<W>) {
    for id in 1..=6 {
        let mut sent = order(world.as_ref(), id, None);
        if id % 2 == 0 {
            sent.correlation_id = Some(format!("flow-{id}"));
        }
        world.publish(&sent).await;
    }
    let wrong = Arc::new(AtomicU32::new(0));
    let handler = handler_fn({
        let (world, wrong) = (world.clone(), wrong.clone());
        move |msg: Message<Order>, tx: TxHandle<WorldTx<W>>| {
            let (world, wrong) = (world.clone(), wrong.clone());
            async move {
                let cause = tx.lock().await.cause().cloned();
                if cause != Some(Cause::of(&msg.envelope)) {
                    wrong.fetch_add(1, SeqCst);
                }
                world.apply(&tx, msg.payload.id).await
            }
        }
    });
    let consumer = consumer(world.as_ref(), handler, options().max_batch(4));
    let report =
        run_until::<W, _, _, _>(consumer, |report| async move { report.processed == 6 }).await;
    assert_eq!(report.processed, 6);
    assert_eq!(wrong.load(SeqCst), 0, "a handler ran without its cause");
}

/// Sends a parked message again: publishes it anew or, through a stored
/// inbox, requeues its failed row.
pub(crate) async fn send_again<W: ConsumerWorld>(world: &W, sent: &tidings_core::Envelope) {
    match world.kept() {
        None => world.publish(sent).await,
        Some(kept) => {
            let route = world.inbox().consumer().to_owned();
            let requeued = kept.get_store().requeue_failed(&route, Requeue::All).await;
            assert_eq!(
                requeued.expect("requeue"),
                1,
                "the parked message is a failed row"
            );
        }
    }
}
