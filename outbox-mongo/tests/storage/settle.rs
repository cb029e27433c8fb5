//! Settling a batch whose lease, unexpired by its own clock, was taken all
//! the same by a relay whose clock runs far ahead: the plain fenced writes
//! touch only what the lease still holds, and the report names exactly the
//! documents they could not settle.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::support::{ORDER_EVENTS, claim, drop_collections, store};
use tidings_core::{ClaimedBatch, ManualClock, OutboxStore, Outcome};
use tidings_mongo::{MongoOutboxStore, Retention};
use tidings_testing::store::settle_all;

/// Far beyond the claims' lease.
const AHEAD: Duration = Duration::from_secs(600);

async fn stage(store: &MongoOutboxStore, count: u64) {
    let mut ctx = store.begin().await.expect("begin");
    for n in 0..count {
        ctx.outbox()
            .stage(&ORDER_EVENTS, "order.placed", &n)
            .expect("stage");
    }
    ctx.commit().await.expect("commit");
}

/// The same collections, seen by a relay whose clock runs [`AHEAD`].
fn ahead(store: &MongoOutboxStore) -> MongoOutboxStore {
    let clock = ManualClock::new(SystemTime::now() + AHEAD);
    let options = store.options().clone().clock(Arc::new(clock));
    MongoOutboxStore::new(store.database().clone(), options).expect("store")
}

fn route() -> &'static str {
    &ORDER_EVENTS.route().name
}

async fn published_marks_skip_a_document_taken_early(retention: Retention) {
    let store = store(retention).await;
    stage(&store, 2).await;
    let old = claim(&store, 10).await;
    assert_eq!(old.records().len(), 2);
    let peer = ahead(&store);
    assert_eq!(peer.sweep_expired(route(), 1).await.unwrap(), 1);
    let new = claim(&peer, 10).await;
    assert_eq!(new.records().len(), 1);
    let taken = new.records()[0].envelope.event_id;

    let settlements = settle_all(&old, Outcome::Published);
    let report = old.settle(settlements).await.unwrap();
    assert_eq!((report.published, report.lost.clone()), (1, vec![taken]));
    assert_eq!(store.stats(route()).await.unwrap().in_flight, 1);

    let settlements = settle_all(&new, Outcome::Published);
    let report = new.settle(settlements).await.unwrap();
    assert_eq!((report.published, report.lost.len()), (1, 0));
    let stats = store.stats(route()).await.unwrap();
    assert_eq!((stats.pending, stats.in_flight), (0, 0));
    drop_collections(&store).await;
}

#[tokio::test]
async fn a_deleting_settlement_skips_and_reports_a_document_taken_early() {
    published_marks_skip_a_document_taken_early(Retention::Delete).await;
}

#[tokio::test]
async fn a_keeping_settlement_skips_and_reports_a_document_taken_early() {
    published_marks_skip_a_document_taken_early(Retention::Keep).await;
}

/// A document swept and not claimed again is pending like a rescheduled
/// one: the report still counts it lost, and it keeps the sweep's state.
#[tokio::test]
async fn rescheduling_reports_swept_documents_lost_whether_claimed_again_or_not() {
    let store = store(Retention::Delete).await;
    stage(&store, 2).await;
    let old = claim(&store, 10).await;
    let peer = ahead(&store);
    assert_eq!(peer.sweep_expired(route(), 10).await.unwrap(), 2);
    let new = claim(&peer, 1).await;
    assert_eq!(new.records().len(), 1);

    let retry = Outcome::Retry {
        delay: Duration::from_secs(30),
        error: "late".into(),
    };
    let settlements = settle_all(&old, retry);
    let report = old.settle(settlements).await.unwrap();
    assert_eq!((report.rescheduled, report.lost.len()), (0, 2));
    let stats = store.stats(route()).await.unwrap();
    assert_eq!((stats.pending, stats.in_flight), (1, 1));
    let waiting = claim(&peer, 10).await;
    assert_eq!(waiting.records().len(), 1, "the swept one is due at once");
    assert_eq!(waiting.records()[0].last_error, None);
    drop_collections(&store).await;
}
