//! What the relay and the monitor report through the `metrics` facade.

use std::collections::HashMap;

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use tidings_core::OutboxSpec;
use tidings_core::memory::{MemoryBroker, MemoryStore};
use tidings_core::relay::{Monitor, Relay};

static EVENTS: OutboxSpec<u32> = OutboxSpec::json("metered").to_queue("metered-q");

/// Every metric by name, from one snapshot (taking one drains the
/// recorder).
fn snapshot(recorder: &DebuggingRecorder) -> HashMap<String, DebugValue> {
    recorder
        .snapshotter()
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| (key.key().name().to_owned(), value))
        .collect()
}

#[test]
fn the_relay_counts_what_it_publishes_and_the_monitor_reports_the_backlog() {
    let recorder = DebuggingRecorder::new();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    metrics::with_local_recorder(&recorder, || {
        runtime.block_on(async {
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
        })
    });
    let metrics = snapshot(&recorder);
    assert_eq!(
        metrics["tidings_relay_published_total"],
        DebugValue::Counter(3)
    );
    assert!(
        matches!(&metrics["tidings_outbox_pending"], DebugValue::Gauge(g) if g.into_inner() == 3.0)
    );
    assert!(
        matches!(&metrics["tidings_relay_claim_seconds"], DebugValue::Histogram(h) if !h.is_empty())
    );
}
