use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};

use bytes::Bytes;

use super::{GiveUpError, GiveUpHook, GivenUp, give_up_fn};
use crate::memory::{MemoryContext, MemoryStore};
use crate::{BoxError, ConsumerName, Envelope, TxHandle};

fn envelope() -> Envelope {
    Envelope::new(
        "order-events",
        "orders",
        "order.placed",
        Bytes::from_static(b"7"),
        "application/json",
    )
}

/// A hook on `store` for consumer `billing` that writes a refund and
/// answers what `answer(n)` says, `n` counting its calls.
fn refunding(
    store: &MemoryStore,
    calls: &Arc<AtomicU32>,
    answer: fn(u32) -> Result<(), BoxError>,
) -> GiveUpHook {
    let calls = calls.clone();
    let hook = give_up_fn(move |given_up: GivenUp, tx: TxHandle<MemoryContext>| {
        let calls = calls.clone();
        async move {
            let id = given_up.envelope.event_id.to_string();
            tx.lock().await.insert("refunds", id, given_up.reason);
            answer(calls.fetch_add(1, SeqCst))
        }
    });
    let billing = ConsumerName::new("billing").unwrap();
    GiveUpHook::for_consumer(store.clone(), &billing, "orders", hook)
}

#[tokio::test]
async fn a_hook_runs_once_and_its_writes_commit_with_its_mark() {
    let store = MemoryStore::new();
    let calls = Arc::new(AtomicU32::new(0));
    let hook = refunding(&store, &calls, |_| Ok(()));
    let sent = envelope();
    assert!(!hook.ran_before(sent.event_id).await.unwrap());
    assert!(hook.run(&sent, "card declined", Some(3)).await.unwrap());
    assert!(!hook.run(&sent, "card declined", Some(4)).await.unwrap());
    assert!(hook.ran_before(sent.event_id).await.unwrap());
    assert_eq!(calls.load(SeqCst), 1);
    let refund = store.get("refunds", &sent.event_id.to_string());
    assert_eq!(refund.as_deref(), Some(&b"card declined"[..]));
}

#[tokio::test]
async fn a_failing_hook_leaves_neither_its_writes_nor_its_mark() {
    let store = MemoryStore::new();
    let calls = Arc::new(AtomicU32::new(0));
    let hook = refunding(&store, &calls, |n| match n {
        0 => Err("the refund service is down".into()),
        _ => Ok(()),
    });
    let sent = envelope();
    let failed = hook.run(&sent, "card declined", None).await;
    assert!(matches!(failed, Err(GiveUpError::Hook(_))), "{failed:?}");
    assert!(store.table("refunds").is_empty(), "a failed hook's write");
    assert!(!hook.ran_before(sent.event_id).await.unwrap());
    assert!(hook.run(&sent, "card declined", None).await.unwrap());
    assert_eq!(store.table("refunds").len(), 1);
}

#[tokio::test]
async fn a_hook_keeping_its_handle_fails_and_marks_nothing() {
    let store = MemoryStore::new();
    let kept = Arc::new(std::sync::Mutex::new(None));
    let hook = give_up_fn({
        let kept = kept.clone();
        move |_given_up: GivenUp, tx: TxHandle<MemoryContext>| {
            let kept = kept.clone();
            async move {
                *kept.lock().unwrap() = Some(tx);
                Ok::<_, BoxError>(())
            }
        }
    });
    let billing = ConsumerName::new("billing").unwrap();
    let hook = GiveUpHook::for_consumer(store.clone(), &billing, "orders", hook);
    let sent = envelope();
    let failed = hook.run(&sent, "card declined", None).await;
    assert!(matches!(failed, Err(GiveUpError::KeptHandle)), "{failed:?}");
    assert!(!hook.ran_before(sent.event_id).await.unwrap());
}

#[tokio::test]
async fn relays_run_their_hook_once_for_each_route() {
    use crate::memory::MemoryBroker;
    use crate::{OutboxSpec, OutboxStore};

    static ORDERS: OutboxSpec<u64> = OutboxSpec::json("order-events").destination("orders");
    static AUDIT: OutboxSpec<u64> = OutboxSpec::json("audit-events").destination("audit");
    let store = MemoryStore::new();
    let mut ctx = store.begin();
    for spec in [&ORDERS, &AUDIT] {
        ctx.outbox().stage(spec, "test.event", &7).unwrap();
    }
    ctx.commit().unwrap();
    let calls = Arc::new(AtomicU32::new(0));
    let hook = give_up_fn({
        let calls = calls.clone();
        move |given_up: GivenUp, tx: TxHandle<MemoryContext>| {
            calls.fetch_add(1, SeqCst);
            async move {
                let route = given_up.envelope.route.clone();
                tx.lock().await.insert("alerts", route, given_up.reason);
                Ok::<_, BoxError>(())
            }
        }
    });
    // Neither destination is declared: the broker refuses both events.
    let relays = store
        .relays(MemoryBroker::new())
        .route(&ORDERS)
        .unwrap()
        .give_up(store.clone(), hook)
        .route(&AUDIT)
        .unwrap()
        .into_relays();
    for relay in &relays {
        relay.drain().await.unwrap();
    }
    assert_eq!(calls.load(SeqCst), 2, "once for each route's failed row");
    assert_eq!(store.table("alerts").len(), 2);
    for spec in [&ORDERS, &AUDIT] {
        assert_eq!(store.stats(spec.name()).await.unwrap().failed, 1);
    }
}
