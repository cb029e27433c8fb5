//! Publishing and receiving.

use std::collections::HashSet;

use tidings_core::PublisherExt;

use super::BrokerHarness;
use super::fixtures::{envelope, next, subscribe};
use crate::names::unique_name;

/// A published envelope arrives with every field intact.
pub async fn round_trip_keeps_every_envelope_field<H: BrokerHarness>(h: &H) {
    let f = h.fixture().await;
    let (sent, mut stream) = f.sent_one().await;
    let delivery = next(&mut stream).await;
    assert_eq!(delivery.envelope(), &sent);
    assert!(
        matches!(delivery.delivery_count(), None | Some(1)),
        "{:?}",
        delivery.delivery_count()
    );
    delivery.ack().await.expect("ack");
}

/// A batch publish delivers every message once.
pub async fn batch_publish_delivers_every_message<H: BrokerHarness>(h: &H) {
    let f = h.fixture().await;
    let batch: Vec<_> = (0..10).map(|n| envelope(&f.queue, n)).collect();
    let results = f.publisher.publish_batch(&batch).await;
    assert_eq!(results.len(), 10);
    assert!(results.iter().all(Result::is_ok), "{results:?}");

    let mut stream = subscribe(&f.source, &f.queue).await;
    let mut seen = HashSet::new();
    for _ in 0..10 {
        let delivery = next(&mut stream).await;
        assert!(seen.insert(delivery.envelope().event_id), "delivered twice");
        delivery.ack().await.expect("ack");
    }
    let sent: HashSet<_> = batch.iter().map(|e| e.event_id).collect();
    assert_eq!(seen, sent);
}

/// Publishing to a destination that does not exist fails permanently.
pub async fn missing_destination_fails_permanently<H: BrokerHarness>(h: &H) {
    let f = h.fixture().await;
    let lost = envelope(&unique_name("missing"), 1);
    let error = f
        .publisher
        .publish(&lost)
        .await
        .expect_err("publish to a missing queue succeeded");
    assert!(!error.is_transient(), "{error:?} should be permanent");
}

/// One bad message in a batch fails alone; the rest are delivered.
pub async fn batch_failure_fails_only_its_message<H: BrokerHarness>(h: &H) {
    let f = h.fixture().await;
    let batch = vec![
        envelope(&f.queue, 1),
        envelope(&unique_name("missing"), 2),
        envelope(&f.queue, 3),
    ];
    let results = f.publisher.publish_batch(&batch).await;
    assert!(results[0].is_ok() && results[2].is_ok(), "{results:?}");
    assert!(
        results[1].as_ref().is_err_and(|e| !e.is_transient()),
        "{results:?}"
    );

    let mut stream = subscribe(&f.source, &f.queue).await;
    let mut seen = HashSet::new();
    for _ in 0..2 {
        let delivery = next(&mut stream).await;
        seen.insert(delivery.envelope().event_id);
        delivery.ack().await.expect("ack");
    }
    assert_eq!(seen, HashSet::from([batch[0].event_id, batch[2].event_id]));
}
