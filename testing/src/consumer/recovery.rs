//! Stopping, restarting and losing the connection lose and double nothing.

use std::sync::Arc;
use std::time::Duration;

use tidings_consumer::{TxHandle, handler_fn};
use tidings_core::Message;
use tokio_util::sync::CancellationToken;

use super::world::{
    ConnectionFaults, ConsumerWorld, Effects, Order, Runs, WorldTx, consumer, counting, options,
    order, run_for, run_until,
};

/// Shutdown in the middle of a backlog acks only what committed; a new
/// consumer then applies the rest, each message once.
pub async fn shutdown_under_load_then_restart_applies_every_message_once<W: ConsumerWorld>(
    world: &Arc<W>,
) {
    const MESSAGES: u32 = 150;
    for id in 0..MESSAGES {
        world.publish(&order(world.as_ref(), id, None)).await;
    }
    let first = consumer(world.as_ref(), counting(world), options());
    // Stopped 400 ms in, whatever it is doing then.
    let stop_after = Duration::from_millis(400);
    let partial = run_for(first, stop_after, |_| async { false })
        .await
        .processed;
    assert_eq!(
        world.effects().await.orders,
        partial,
        "effects and acks disagree after shutdown"
    );

    let second = consumer(world.as_ref(), counting(world), options());
    run_until::<W, _, _, _>(second, |_| {
        let world = world.clone();
        async move { world.effects().await.orders == u64::from(MESSAGES) }
    })
    .await;
    let orders = u64::from(MESSAGES);
    assert_eq!(world.effects().await, Effects { orders, most: 1 });
}

/// The broker closing the consumer's connection mid-backlog costs a
/// reconnect: every message still has its effect once.
pub async fn a_lost_connection_loses_and_doubles_nothing<W: ConnectionFaults>(world: &Arc<W>) {
    const MESSAGES: u32 = 100;
    for id in 0..MESSAGES {
        world.publish(&order(world.as_ref(), id, None)).await;
    }
    let slow = handler_fn({
        let world = world.clone();
        move |msg: Message<Order>, tx: TxHandle<WorldTx<W>>| {
            let world = world.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(10)).await;
                world.apply(&tx, msg.payload.id).await
            }
        }
    });
    let consumer = Arc::new(consumer(world.as_ref(), slow, options().concurrency(4)));
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (consumer, cancel) = (consumer.clone(), cancel.clone());
        async move { consumer.run(cancel).await }
    });
    while world.effects().await.orders < 20 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    world.lose_connection().await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while world.effects().await.orders < u64::from(MESSAGES)
        && tokio::time::Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    cancel.cancel();
    task.await.expect("the consumer task");
    let orders = u64::from(MESSAGES);
    assert_eq!(world.effects().await, Effects { orders, most: 1 });
}
