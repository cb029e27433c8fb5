//! The relay's give-up hook on every store: run once before a row is
//! failed for good, in a transaction of the store's inbox, retried while
//! it fails.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tidings_core::give_up::{GivenUp, GivenUpBy, give_up_fn};
use tidings_core::relay::Relay;
use tidings_core::{
    Backoff, Envelope, InboxStore, OrderingMode, OutboxStore, PublishError, Requeue, RetryPolicy,
    TxHandle,
};

use super::{StoreHarness, event, route};
use crate::eventually::eventually;
use crate::publisher::{PublishEach, PublishOne};

/// A store harness whose store has an inbox, for the give-up cases.
pub trait InboxHarness: StoreHarness {
    /// The inbox store beside the outbox store.
    type Inbox: InboxStore;

    /// The inbox of `store` (the same tables or collections).
    fn inbox(&self, store: &Self::Store) -> Self::Inbox;
}

/// A broker that has no route to any destination: every row fails for
/// good at once.
#[derive(Debug, Clone)]
struct NoRoute;

impl PublishOne for NoRoute {
    async fn publish_one(&self, envelope: &Envelope) -> Result<(), PublishError> {
        Err(PublishError::Unroutable {
            destination: envelope.destination.clone(),
        })
    }
}

/// A row failed for good runs the relay's give-up hook once, with the
/// reason: while the hook fails the row is rescheduled rather than failed,
/// once it succeeds the row is failed, and the row failed again after a
/// requeue does not run it again.
pub async fn a_row_failed_for_good_runs_the_relays_give_up_hook_once<H: InboxHarness>(h: &H) {
    let store = h.store().await;
    let mut route = route(OrderingMode::Unordered);
    let quick = Backoff::new(Duration::from_millis(10), Duration::from_millis(10));
    route.retry = RetryPolicy::new().backoff(quick);
    h.commit(&store, vec![event(&route, 1)]).await;
    let calls: Arc<Mutex<Vec<GivenUp>>> = Arc::default();
    let hook = give_up_fn({
        let calls = calls.clone();
        move |given_up: GivenUp, _tx: TxHandle<<H::Inbox as InboxStore>::Tx>| {
            let calls = calls.clone();
            async move {
                let first = {
                    let mut calls = calls.lock().expect("calls");
                    calls.push(given_up);
                    calls.len() == 1
                };
                match first {
                    true => Err("the alerting service is down".into()),
                    false => Ok(()),
                }
            }
        }
    });
    let relay = Relay::for_route(store.clone(), PublishEach::new(NoRoute), route.clone())
        .expect("a legal route")
        .give_up(h.inbox(&store), hook);

    let first = relay.run_pass().await.expect("a pass");
    assert_eq!((first.failed, first.rescheduled), (0, 1), "{first:?}");
    let within = Duration::from_secs(10);
    let second = eventually(
        within,
        || async { relay.run_pass().await.expect("a pass") },
        |r| r.claimed > 0,
    )
    .await;
    assert_eq!(second.failed, 1, "the row was not failed once its hook ran");

    let requeued = store.requeue_failed(&route.name, Requeue::All).await;
    assert_eq!(requeued.expect("requeue"), 1);
    let third = relay.run_pass().await.expect("a pass");
    assert_eq!(third.failed, 1, "the requeued row was not failed again");

    let calls = calls.lock().expect("calls");
    assert_eq!(
        calls.len(),
        2,
        "the hook ran other than twice (once failing)"
    );
    assert!(
        calls[1].reason.contains("poison"),
        "reason: {}",
        calls[1].reason
    );
    let by = GivenUpBy::Relay {
        route: route.name.to_string(),
    };
    assert_eq!(calls[1].by, by);
}
