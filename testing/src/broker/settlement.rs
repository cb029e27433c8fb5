//! Settling deliveries: ack, nack, delayed nack, dead-letter, abandon.

use std::time::Duration;

use tidings_core::{PublisherExt, Redelivery};

use super::BrokerHarness;
use super::fixtures::{envelope, next, next_within, subscribe};

/// An acked message never comes back.
pub async fn ack_is_final<H: BrokerHarness>(h: &H) {
    let f = h.fixture().await;
    f.publisher
        .publish(&envelope(&f.queue, 1))
        .await
        .expect("publish");
    let mut stream = subscribe(&f.source, &f.queue).await;
    next(&mut stream).await.ack().await.expect("ack");
    assert!(
        next_within(&mut stream, Duration::from_secs(1))
            .await
            .is_none()
    );
    drop(stream);

    let mut again = subscribe(&f.source, &f.queue).await;
    assert!(
        next_within(&mut again, Duration::from_secs(1))
            .await
            .is_none()
    );
}

/// A nacked message comes back with a growing delivery count.
pub async fn nack_redelivers_with_growing_count<H: BrokerHarness>(h: &H) {
    let f = h.fixture().await;
    let (sent, mut stream) = f.sent_one().await;

    let mut counts = Vec::new();
    for _ in 0..3 {
        let delivery = next(&mut stream).await;
        assert_eq!(delivery.envelope().event_id, sent.event_id);
        counts.push(delivery.delivery_count());
        delivery.nack(Redelivery::Now).await.expect("nack");
    }
    next(&mut stream).await.ack().await.expect("ack");
    let known: Vec<u32> = counts.iter().flatten().copied().collect();
    if known.len() == counts.len() {
        if h.exact_delivery_counts() {
            assert_eq!(known, [1, 2, 3]);
        } else {
            assert!(
                known[0] == 1 && known[1] >= 2 && known[2] >= known[1],
                "{known:?}"
            );
        }
    } else {
        assert!(
            known.is_empty(),
            "delivery counts known only sometimes: {counts:?}"
        );
    }
}

/// A message nacked with a delay stays away for the delay, then returns.
pub async fn delayed_nack_waits_before_redelivery<H: BrokerHarness>(h: &H) {
    let f = h.fixture().await;
    let (sent, mut stream) = f.sent_one().await;
    next(&mut stream)
        .await
        .nack(Redelivery::After(Duration::from_secs(2)))
        .await
        .expect("nack");

    assert!(
        next_within(&mut stream, Duration::from_millis(1200))
            .await
            .is_none(),
        "redelivered before its delay"
    );
    let again = next(&mut stream).await;
    assert_eq!(again.envelope().event_id, sent.event_id);
    again.ack().await.expect("ack");
}

/// A dead-lettered message lands in the dead-letter queue with its reason
/// and leaves the work queue.
pub async fn dead_letter_lands_in_the_dead_letter_queue<H: BrokerHarness>(h: &H) {
    let f = h.fixture().await;
    let (sent, mut stream) = f.sent_one().await;
    let reason = "handler rejected the order";
    next(&mut stream)
        .await
        .dead_letter(reason)
        .await
        .expect("dead-letter");
    assert!(
        next_within(&mut stream, Duration::from_secs(1))
            .await
            .is_none()
    );

    let mut dead = subscribe(&f.source, &f.dead_letter_queue).await;
    let parked = next(&mut dead).await;
    assert_eq!(parked.envelope().event_id, sent.event_id);
    assert_eq!(parked.envelope().payload, sent.payload);
    let headers = &parked.envelope().headers;
    assert!(
        headers.values().any(|v| v.contains(reason)),
        "reason missing from {headers:?}"
    );
    parked.ack().await.expect("ack");
}

/// A delivery dropped without settling (its consumer went away) is
/// delivered again.
pub async fn unsettled_delivery_is_redelivered<H: BrokerHarness>(h: &H) {
    let f = h.fixture().await;
    let (sent, mut stream) = f.sent_one().await;
    let abandoned = next(&mut stream).await;
    drop(abandoned);
    drop(stream);

    let mut again = subscribe(&f.source, &f.queue).await;
    let delivery = next(&mut again).await;
    assert_eq!(delivery.envelope().event_id, sent.event_id);
    if let Some(count) = delivery.delivery_count() {
        assert!(count >= 2, "redelivery counted as {count}");
    }
    delivery.ack().await.expect("ack");
}
