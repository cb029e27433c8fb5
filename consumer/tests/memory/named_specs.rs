//! Specs named at run time, as an environment's prefix needs: staged,
//! relayed and consumed with no `'static` name anywhere.

use std::time::Duration;

use tidings_consumer::{Consumer, HandlerError, Inbox, TxHandle, handler_fn};
use tidings_core::lifecycle::LifecyclePlan;
use tidings_core::memory::{MemoryBroker, MemoryContext, MemoryStore};
use tidings_core::{Message, OutboxSpec, QueueSpec};

async fn record(msg: Message<u32>, tx: TxHandle<MemoryContext>) -> Result<(), HandlerError> {
    tx.lock()
        .await
        .insert("effects", msg.payload.to_string(), "done");
    Ok(())
}

#[tokio::test]
async fn specs_named_at_run_time_are_staged_relayed_and_consumed() {
    let env = format!("env{}", std::process::id());
    let queue_name = format!("{env}-orders");
    let events: OutboxSpec<u32> =
        OutboxSpec::json_named(format!("{env}-order-events")).destination_named(queue_name.clone());
    let orders: QueueSpec<u32> = QueueSpec::json_named(queue_name.clone());
    events.check_pair(&orders).unwrap();

    let store = MemoryStore::new();
    let broker = MemoryBroker::new();
    broker.declare_queue(&queue_name);
    for n in 0..5 {
        let mut ctx = store.begin();
        ctx.outbox().stage(&events, "order.placed", &n).unwrap();
        ctx.commit().unwrap();
    }
    let consumer = Consumer::new(broker.clone(), orders, handler_fn(record))
        .unwrap()
        .inbox(Inbox::new(store.clone(), "billing").unwrap());
    let relays = store.relays(broker).route(&events).unwrap();
    let plan = LifecyclePlan::new().steps(relays).step("billing", consumer);

    let done = async {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while store.table("effects").len() < 5 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    plan.run_until(done).await.unwrap();
    assert_eq!(store.table("effects").len(), 5);
}
