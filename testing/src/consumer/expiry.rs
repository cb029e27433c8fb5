//! Messages that arrive past their expiry: parked by default, skipped on
//! request, and never handled.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tidings_consumer::Expired;
use tidings_core::truncate_to_micros;

use super::world::run_until;
use super::world::{ConsumerWorld, Effects, consumer, counting, options, order};

/// Of two messages sent already expired, neither reaches the handler: the
/// first consumer parks one (the default), the second skips the other;
/// a message expiring later is handled. The expiry travels with the
/// message through the world's broker.
pub async fn expired_messages_are_parked_or_skipped_never_handled<W: ConsumerWorld>(
    world: &Arc<W>,
) {
    let past = truncate_to_micros(SystemTime::now() - Duration::from_secs(1));
    let later = truncate_to_micros(SystemTime::now() + Duration::from_secs(3600));
    let mut expired = order(world.as_ref(), 1, None);
    expired.expires_at = Some(past);
    let mut current = order(world.as_ref(), 2, None);
    current.expires_at = Some(later);
    world.publish(&expired).await;
    world.publish(&current).await;
    let parking = consumer(world.as_ref(), counting(world), options());
    let report = run_until::<W, _, _, _>(parking, |report| async move {
        report.parked + report.processed == 2
    })
    .await;
    assert_eq!(
        (report.processed, report.parked, report.expired),
        (1, 1, 1),
        "{report:?}"
    );
    assert_eq!(world.effects().await, Effects { orders: 1, most: 1 });

    let mut skipped = order(world.as_ref(), 3, None);
    skipped.expires_at = Some(past);
    world.publish(&skipped).await;
    let skipping = consumer(
        world.as_ref(),
        counting(world),
        options().expired(Expired::Skip),
    );
    let report =
        run_until::<W, _, _, _>(skipping, |report| async move { report.expired == 1 }).await;
    assert_eq!(
        (report.processed, report.parked, report.expired),
        (0, 0, 1),
        "{report:?}"
    );
    assert_eq!(world.effects().await, Effects { orders: 1, most: 1 });
}
