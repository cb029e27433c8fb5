//! The give-up hook: run once before a message is parked, in a
//! transaction of its own that commits first, retried while it fails.

use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::sync::{Arc, Mutex};

use tidings_consumer::{HandlerError, TxHandle};
use tidings_core::BoxError;
use tidings_core::give_up::{GiveUp, GiveUpHook, GivenUp, GivenUpBy, give_up_fn};

use super::world::{
    ConsumerWorld, Effects, WorldTx, answering, giving_up, options, order, run_until,
};

/// The effect a give-up hook writes for an order: another order's, so the
/// world counts it beside the handler's.
const COMPENSATION: u32 = 1_000;

/// What the suite's hooks saw: each call's reason.
type Calls = Arc<Mutex<Vec<String>>>;

/// A hook that records each call, fails the calls `fails` says, and
/// otherwise writes the order's compensation in its transaction.
fn compensating<W, F>(
    world: &Arc<W>,
    calls: &Calls,
    fails: F,
) -> impl GiveUp<WorldTx<W>> + use<W, F>
where
    W: ConsumerWorld,
    F: Fn(usize) -> bool + Clone + Send + Sync + 'static,
{
    let (world, calls) = (world.clone(), calls.clone());
    give_up_fn(move |given_up: GivenUp, tx: TxHandle<WorldTx<W>>| {
        let (world, calls, fails) = (world.clone(), calls.clone(), fails.clone());
        async move {
            let order: super::Order = serde_json::from_slice(&given_up.envelope.payload)?;
            world
                .apply(&tx, COMPENSATION + order.id)
                .await
                .map_err(|e| BoxError::from(e.to_string()))?;
            let call = {
                let mut calls = calls.lock().expect("calls");
                calls.push(given_up.reason.clone());
                calls.len() - 1
            };
            if fails(call) {
                return Err("the compensation's service is down".into());
            }
            Ok(())
        }
    })
}

/// A handler that always fails for good.
fn declining<W: ConsumerWorld>(
    world: &Arc<W>,
) -> impl tidings_consumer::Handler<super::Order, WorldTx<W>> + use<W> {
    answering(world, &Arc::default(), |_| {
        Err(HandlerError::permanent("card declined"))
    })
}

const ONCE: Effects = Effects { orders: 1, most: 1 };

/// Parking a message runs the give-up hook once, with the reason and who
/// gave up, and its writes commit while the handler's do not.
pub async fn parking_runs_the_give_up_hook_once_and_commits_its_writes<W: ConsumerWorld>(
    world: &Arc<W>,
) {
    world.publish(&order(world.as_ref(), 7, None)).await;
    let calls = Calls::default();
    let by = Arc::new(Mutex::new(None));
    let hook = {
        let (inner, by) = (compensating(world, &calls, |_| false), by.clone());
        give_up_fn(move |given_up: GivenUp, tx: TxHandle<WorldTx<W>>| {
            let (inner, by) = (inner.clone(), by.clone());
            async move {
                *by.lock().expect("by") = Some(given_up.by.clone());
                inner.give_up(given_up, tx).await
            }
        })
    };
    let consumer = giving_up(world.as_ref(), declining(world), options(), hook);
    let report =
        run_until::<W, _, _, _>(consumer, |report| async move { report.parked == 1 }).await;
    assert_eq!((report.parked, report.processed), (1, 0));
    let calls = calls.lock().expect("calls").clone();
    assert_eq!(calls.len(), 1, "the hook ran other than once: {calls:?}");
    assert!(calls[0].contains("card declined"), "reason: {}", calls[0]);
    let expected = GivenUpBy::Consumer {
        consumer: world.inbox().consumer().to_owned(),
        queue: world.queue().name().to_owned(),
    };
    assert_eq!(by.lock().expect("by").clone(), Some(expected));
    // The compensation committed; the handler's write did not.
    assert_eq!(world.effects().await, ONCE);
}

/// A hook that fails leaves nothing and keeps the message from being
/// parked: it is retried, and parked once the hook succeeds.
pub async fn a_failing_give_up_hook_is_retried_and_the_message_parked_after_it_succeeds<
    W: ConsumerWorld,
>(
    world: &Arc<W>,
) {
    world.publish(&order(world.as_ref(), 7, None)).await;
    let calls = Calls::default();
    let hook = compensating(world, &calls, |call| call == 0);
    let consumer = giving_up(world.as_ref(), declining(world), options(), hook);
    let report =
        run_until::<W, _, _, _>(consumer, |report| async move { report.parked == 1 }).await;
    assert_eq!(report.parked, 1);
    assert!(
        report.failed >= 1,
        "the hook's failure retried nothing: {report:?}"
    );
    assert_eq!(
        calls.lock().expect("calls").len(),
        2,
        "the hook ran other than twice"
    );
    // The failed call's write went with its transaction.
    assert_eq!(world.effects().await, ONCE);
}

/// A message given up on before, back again (as after a crash between the
/// hook's commit and the parking), is parked without running the hook
/// again.
pub async fn a_message_given_up_before_is_parked_without_running_the_hook_again<
    W: ConsumerWorld,
>(
    world: &Arc<W>,
) {
    let sent = order(world.as_ref(), 7, None);
    world.publish(&sent).await;
    let calls = Calls::default();
    for run in 0..2 {
        if run == 1 {
            // Back again: sent anew, or through a stored inbox, its failed
            // row requeued.
            super::delivery::send_again(world.as_ref(), &sent).await;
        }
        let hook = compensating(world, &calls, |_| false);
        let consumer = giving_up(world.as_ref(), declining(world), options(), hook);
        let report =
            run_until::<W, _, _, _>(consumer, |report| async move { report.parked == 1 }).await;
        assert_eq!(report.parked, 1, "run {run} parked nothing");
    }
    assert_eq!(calls.lock().expect("calls").len(), 1, "the hook ran again");
    assert_eq!(world.effects().await, ONCE);
}

/// A redelivery of a message whose hook ran (as after a crash between the
/// hook's commit and the parking) is parked without running its handler
/// or the hook again.
pub async fn a_redelivery_of_a_message_given_up_on_is_parked_without_its_handler<
    W: ConsumerWorld,
>(
    world: &Arc<W>,
) {
    let sent = order(world.as_ref(), 7, None);
    let calls = Calls::default();
    // The hook ran and committed, and then the process died.
    let inbox = world.inbox();
    let queue = world.queue();
    let hook = compensating(world, &calls, |_| false);
    let store = inbox.store().clone();
    let ran = GiveUpHook::for_consumer(store, inbox.consumer_name(), queue.name(), hook.clone());
    let ran = ran
        .run(&sent, "the process died before parking", None)
        .await;
    assert!(ran.expect("the hook runs"), "the hook ran before");
    world.publish(&sent).await;
    // The first delivery fails and comes back; the redelivery is parked.
    let handled = Arc::new(AtomicU32::new(0));
    let handler = answering(world, &handled, |_| Err(HandlerError::transient("hiccup")));
    let consumer = giving_up(world.as_ref(), handler, options().attempts(1), hook);
    let report =
        run_until::<W, _, _, _>(consumer, |report| async move { report.parked == 1 }).await;
    assert_eq!(report.parked, 1);
    assert_eq!(handled.load(SeqCst), 1, "the handler ran on the redelivery");
    assert_eq!(calls.lock().expect("calls").len(), 1, "the hook ran again");
    assert_eq!(world.effects().await, ONCE);
}
