//! What the relay and the monitor report through the `metrics` facade.

use std::collections::HashMap;

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use tidings_core::OutboxSpec;
use tidings_core::memory::{MemoryBroker, MemoryStore};
use tidings_core::relay::{Monitor, Relay, Tenant};

static EVENTS: OutboxSpec<u32> = OutboxSpec::json("metered").destination("metered-q");
/// Routed to a queue the broker does not have: every publish fails for good.
static LOST: OutboxSpec<u32> = OutboxSpec::json("lost").destination("nowhere");

/// Every metric of `route` by name, from one snapshot (taking one drains
/// the recorder).
fn snapshot(recorder: &DebuggingRecorder, route: &str) -> HashMap<String, DebugValue> {
    recorder
        .snapshotter()
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(key, ..)| {
            key.key()
                .labels()
                .any(|l| l.key() == "route" && l.value() == route)
        })
        .map(|(key, _, _, value)| (key.key().name().to_owned(), value))
        .collect()
}

/// What `work` recorded, run to its end on a runtime of its own with a
/// recorder local to it.
/// The value of the gauge `name` among `metrics`, which must hold it.
#[track_caller]
fn gauge(metrics: &HashMap<String, DebugValue>, name: &str) -> f64 {
    match metrics.get(name) {
        Some(DebugValue::Gauge(g)) => g.into_inner(),
        other => panic!("{name} is no gauge: {other:?}"),
    }
}

fn recorded(work: impl Future<Output = ()>) -> DebuggingRecorder {
    let recorder = DebuggingRecorder::new();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    metrics::with_local_recorder(&recorder, || runtime.block_on(work));
    recorder
}

#[test]
fn the_relay_counts_what_it_publishes_and_the_monitor_reports_the_backlog() {
    let recorder = recorded(async {
        let store = MemoryStore::new();
        let broker = MemoryBroker::new();
        broker.declare_queue("metered-q");
        let mut ctx = store.begin();
        for n in 0..3 {
            ctx.outbox().stage(&EVENTS, "t", &n).unwrap();
        }
        ctx.commit().unwrap();
        Monitor::new(store.clone(), "metered")
            .observe()
            .await
            .unwrap();
        Relay::new(store.clone(), broker, &EVENTS)
            .unwrap()
            .drain()
            .await
            .unwrap();
    });
    let metrics = snapshot(&recorder, "metered");
    assert_eq!(
        metrics["tidings_relay_published_total"],
        DebugValue::Counter(3)
    );
    assert_eq!(gauge(&metrics, "tidings_outbox_pending"), 3.0);
    for name in ["tidings_outbox_in_flight", "tidings_outbox_failed"] {
        gauge(&metrics, name);
    }
    let oldest = gauge(&metrics, "tidings_outbox_oldest_pending_seconds");
    assert!((0.0..60.0).contains(&oldest), "{oldest}");
    for histogram in [
        "tidings_relay_claim_seconds",
        "tidings_relay_publish_seconds",
    ] {
        assert!(
            matches!(&metrics[histogram], DebugValue::Histogram(h) if !h.is_empty()),
            "{histogram} missing"
        );
    }
}

#[test]
fn the_relay_counts_events_it_fails() {
    let recorder = recorded(async {
        let store = MemoryStore::new();
        let mut ctx = store.begin();
        ctx.outbox().stage(&LOST, "t", &9).unwrap();
        ctx.commit().unwrap();
        Relay::new(store.clone(), MemoryBroker::new(), &LOST)
            .unwrap()
            .drain()
            .await
            .unwrap();
        Monitor::new(store.clone(), "lost").observe().await.unwrap();
    });
    let metrics = snapshot(&recorder, "lost");
    assert_eq!(
        metrics["tidings_relay_failed_total"],
        DebugValue::Counter(1)
    );
    assert_eq!(gauge(&metrics, "tidings_outbox_failed"), 1.0);
}

#[test]
fn a_tenants_relay_and_monitor_label_their_metrics_with_it() {
    static TENANT_EVENTS: OutboxSpec<u32> =
        OutboxSpec::json("tenant-metered").destination("tenant-metered-q");
    let tenant = Tenant::new("acme");
    let recorder = recorded(async {
        let store = MemoryStore::new();
        let broker = MemoryBroker::new();
        broker.declare_queue("tenant-metered-q");
        let mut ctx = store.begin();
        ctx.outbox().stage(&TENANT_EVENTS, "t", &1).unwrap();
        ctx.commit().unwrap();
        let monitor = Monitor::new(store.clone(), "tenant-metered").tenant(&tenant);
        monitor.observe().await.unwrap();
        let relay = Relay::new(store.clone(), broker, &TENANT_EVENTS).unwrap();
        relay.tenant(tenant.clone()).drain().await.unwrap();
    });
    let snapshot = recorder.snapshotter().snapshot().into_vec();
    let labelled: Vec<(String, Vec<(String, String)>)> = (snapshot.into_iter())
        .map(|(key, ..)| {
            let labels = key.key().labels();
            let labels = labels.map(|l| (l.key().to_owned(), l.value().to_owned()));
            (key.key().name().to_owned(), labels.collect())
        })
        .collect();
    let want = vec![
        ("route".to_owned(), "tenant-metered".to_owned()),
        ("tenant".to_owned(), "acme".to_owned()),
    ];
    for name in ["tidings_relay_published_total", "tidings_outbox_pending"] {
        let found = labelled.iter().find(|(n, _)| n == name);
        assert_eq!(found.map(|(_, l)| l), Some(&want), "{name}: {labelled:?}");
    }
}
