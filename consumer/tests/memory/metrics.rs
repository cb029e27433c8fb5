//! What the consumer reports through the `metrics` facade: deliveries by
//! outcome and how long handlers ran.

use crate::support;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use support::memory::*;
use tidings_consumer::{HandlerError, TxHandle, handler_fn};
use tidings_core::memory::MemoryContext;
use tidings_core::{Message, PublisherExt};
use tidings_inbox::Inbox;

/// Every metric by name and sorted labels, from one snapshot.
fn snapshot(recorder: &DebuggingRecorder) -> HashMap<(String, Vec<String>), DebugValue> {
    recorder
        .snapshotter()
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| {
            let mut labels: Vec<String> = key
                .key()
                .labels()
                .map(|l| format!("{}={}", l.key(), l.value()))
                .collect();
            labels.sort();
            ((key.key().name().to_owned(), labels), value)
        })
        .collect()
}

fn labels(outcome: &str) -> Vec<String> {
    vec![
        "consumer=billing".to_owned(),
        format!("outcome={outcome}"),
        "queue=orders".to_owned(),
    ]
}

/// Order 1 is handled, then delivered again (a duplicate); order 2 fails
/// once for now (retried) and then succeeds; order 3 fails for good
/// (parked).
#[test]
fn deliveries_are_counted_by_outcome_and_handlers_timed() {
    let recorder = DebuggingRecorder::new();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    metrics::with_local_recorder(&recorder, || {
        runtime.block_on(async {
            let (store, broker) = setup();
            let first = order(1, None);
            broker.publish(&first).await.unwrap();
            broker.publish(&first).await.unwrap();
            broker.publish(&order(2, None)).await.unwrap();
            broker.publish(&order(3, None)).await.unwrap();
            let calls = Arc::new(AtomicU32::new(0));
            let handler = handler_fn(move |msg: Message<Order>, tx: TxHandle<MemoryContext>| {
                let calls = calls.clone();
                async move {
                    match msg.payload.id {
                        2 if calls.fetch_add(1, SeqCst) == 0 => {
                            Err(HandlerError::transient("not yet"))
                        }
                        3 => Err(HandlerError::permanent("never")),
                        _ => {
                            count_effect(&msg, &tx).await;
                            Ok(())
                        }
                    }
                }
            });
            let consumer = tidings_consumer::Consumer::new(broker.clone(), &ORDERS, handler)
                .unwrap()
                .inbox(Inbox::new(store.clone(), "billing").unwrap())
                .options(options().attempts(1));
            let report = run_until(consumer, |r| {
                r.processed == 2 && r.duplicates == 1 && r.parked == 1
            })
            .await;
            assert_eq!(
                (
                    report.processed,
                    report.duplicates,
                    report.failed,
                    report.parked
                ),
                (2, 1, 1, 1)
            );
        })
    });
    let metrics = snapshot(&recorder);
    let counter = |outcome: &str| {
        metrics.get(&(
            "tidings_consumer_messages_total".to_owned(),
            labels(outcome),
        ))
    };
    assert_eq!(counter("acked"), Some(&DebugValue::Counter(2)));
    assert_eq!(counter("duplicate"), Some(&DebugValue::Counter(1)));
    assert_eq!(counter("retried"), Some(&DebugValue::Counter(1)));
    assert_eq!(counter("parked"), Some(&DebugValue::Counter(1)));
    let timings = |outcome: &str| match metrics.get(&(
        "tidings_consumer_handler_seconds".to_owned(),
        labels(outcome),
    )) {
        Some(DebugValue::Histogram(h)) => h.iter().map(|v| v.into_inner()).collect(),
        other => panic!("no handler histogram for {outcome}: {other:?}"),
    };
    let ok: Vec<f64> = timings("ok");
    let failed: Vec<f64> = timings("error");
    assert_eq!(
        (ok.len(), failed.len()),
        (2, 2),
        "one timing per handler call"
    );
    assert!(ok.iter().chain(&failed).all(|s| (0.0..5.0).contains(s)));
}
