//! A shared relay over the stores of several tenants: one tenant's store
//! broken for good (its schema dropped) does not stop the others, while
//! without tenants such an error ends the run as a relay's would.

use crate::support;

use std::time::Duration;

use support::ORDER_EVENTS;
use tidings_core::memory::MemoryBroker;
use tidings_core::relay::{Relay, RelayOptions, SharedRelay, Tenant};
use tidings_postgres::{PgOutboxStore, Retention};
use tokio_util::sync::CancellationToken;

/// A migrated store whose schema is then dropped: every claim fails for
/// good.
async fn broken_store() -> PgOutboxStore {
    let store = support::store(Retention::Delete).await;
    let schema = store.options().get_schema();
    let sql = format!("drop schema \"{schema}\" cascade");
    support::run_sql(store.pool(), sql).await;
    store
}

fn relay(store: &PgOutboxStore, broker: &MemoryBroker) -> Relay<PgOutboxStore, MemoryBroker> {
    let options = RelayOptions::default().poll_interval(Duration::from_millis(20));
    Relay::new(store.clone(), broker.clone(), &ORDER_EVENTS)
        .unwrap()
        .options(options)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_whose_store_breaks_does_not_stop_the_others() {
    let (broken, healthy) = (
        broken_store().await,
        support::store(Retention::Delete).await,
    );
    let broker = MemoryBroker::new();
    broker.declare_queue("orders");
    let shared = SharedRelay::new()
        .relay(relay(&broken, &broker).tenant(Tenant::new("broken")))
        .relay(relay(&healthy, &broker).tenant(Tenant::new("healthy")));
    let cancel = CancellationToken::new();
    let running = tokio::spawn({
        let cancel = cancel.clone();
        async move { shared.run(cancel).await }
    });
    // The broken tenant's first passes fail before the healthy one stages.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut ctx = healthy.begin().await.unwrap();
    for n in 0..3 {
        ctx.outbox()
            .stage(&ORDER_EVENTS, "order.placed", &n)
            .unwrap();
    }
    ctx.commit().await.unwrap();

    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while broker.depth("orders") < 3 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(broker.depth("orders"), 3, "the healthy tenant was relayed");
    assert!(!running.is_finished(), "the shared relay kept running");
    cancel.cancel();
    running.await.unwrap().expect("a clean stop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_tenants_a_store_broken_for_good_ends_the_run() {
    let broken = broken_store().await;
    let broker = MemoryBroker::new();
    let shared = SharedRelay::new().relay(relay(&broken, &broker));
    let ended = tokio::time::timeout(
        Duration::from_secs(30),
        shared.run(CancellationToken::new()),
    )
    .await
    .expect("the run ends");
    let error = ended.expect_err("a permanent error");
    assert!(!error.is_transient(), "{error}");
}
