//! Counting handler attempts that did not commit.

use std::time::Duration;

use tidings_core::{Attempts, InboxAttempts, InboxMark, InboxPurge, InboxStore};
use uuid::Uuid;

use super::{BILLING, InboxHarness, SHIPPING};

fn counts(started: u32, finished: u32) -> Option<Attempts> {
    Some(Attempts { started, finished })
}

/// A transaction marking `event` handled by billing and clearing its
/// attempts, as a handler's success leaves it before its commit.
async fn handled<S: InboxAttempts>(store: &S, event: Uuid) -> S::Tx {
    let mut tx = store.begin().await.unwrap();
    store.mark(&mut tx, BILLING.key(event)).await.unwrap();
    let cleared = store.clear_attempts(&mut tx, BILLING.key(event)).await;
    cleared.unwrap();
    tx
}

/// Each start is counted and returned with the ends counted so far; an end
/// whose start was not counted counts both; reading the count counts
/// nothing.
pub async fn attempts_count_starts_and_ends(h: &impl InboxHarness) {
    let store = h.store().await;
    let event = Uuid::now_v7();
    let start = || store.start_attempt(BILLING.key(event));
    let read = || store.attempts(BILLING.key(event));
    assert_eq!(read().await.unwrap(), counts(0, 0), "none counted yet");
    assert_eq!(start().await.unwrap(), counts(1, 0));
    store
        .finish_attempt(BILLING.key(event), true)
        .await
        .unwrap();
    assert_eq!(start().await.unwrap(), counts(2, 1));
    assert_eq!(read().await.unwrap(), counts(2, 1));
    assert_eq!(read().await.unwrap(), counts(2, 1), "a read counts nothing");
    assert_eq!(start().await.unwrap(), counts(3, 1));
    assert_eq!(
        store.attempts(SHIPPING.key(event)).await.unwrap(),
        counts(0, 0),
        "another consumer's count is its own"
    );

    let first_failed = Uuid::now_v7();
    store
        .finish_attempt(BILLING.key(first_failed), false)
        .await
        .unwrap();
    let again = store
        .start_attempt(BILLING.key(first_failed))
        .await
        .unwrap();
    assert_eq!(
        again,
        counts(2, 1),
        "an uncounted start is counted with its end"
    );
    assert_eq!(again.unwrap().unfinished(), 1);
}

/// Counts of one consumer or event never show in another's.
pub async fn attempts_are_counted_per_consumer_and_event(h: &impl InboxHarness) {
    let store = h.store().await;
    let (event, other) = (Uuid::now_v7(), Uuid::now_v7());
    for _ in 0..3 {
        store.start_attempt(BILLING.key(event)).await.unwrap();
    }
    assert_eq!(
        store.start_attempt(SHIPPING.key(event)).await.unwrap(),
        counts(1, 0)
    );
    assert_eq!(
        store.start_attempt(BILLING.key(other)).await.unwrap(),
        counts(1, 0)
    );
    assert_eq!(
        store.start_attempt(BILLING.key(event)).await.unwrap(),
        counts(4, 0)
    );
}

/// Clearing in the handler's transaction takes the count away only when
/// that transaction commits.
pub async fn a_commit_clears_attempts_and_a_rollback_keeps_them(h: &impl InboxHarness) {
    let store = h.store().await;
    let event = Uuid::now_v7();
    store.start_attempt(BILLING.key(event)).await.unwrap();

    let mut tx = store.begin().await.unwrap();
    assert_eq!(
        store.mark(&mut tx, BILLING.key(event)).await.unwrap(),
        InboxMark::Fresh(())
    );
    store
        .clear_attempts(&mut tx, BILLING.key(event))
        .await
        .unwrap();
    store.rollback(tx).await.unwrap();
    assert_eq!(
        store.start_attempt(BILLING.key(event)).await.unwrap(),
        counts(2, 0),
        "a rolled-back clear keeps the count"
    );

    let tx = handled(&store, event).await;
    store.commit(tx).await.unwrap();
    let mut tx = store.begin().await.unwrap();
    assert_eq!(
        store.mark(&mut tx, BILLING.key(event)).await.unwrap(),
        InboxMark::Duplicate
    );
    store.rollback(tx).await.unwrap();
    assert_eq!(
        store.start_attempt(BILLING.key(event)).await.unwrap(),
        counts(1, 0),
        "a committed clear deletes the count"
    );
}

/// A start is committed apart from the handler's transaction: a
/// transaction dropped mid-way, as a dying process leaves it, takes neither
/// the count nor the mark with it to the next attempt.
pub async fn a_start_outlives_a_transaction_that_never_ends(h: &impl InboxHarness) {
    let store = h.store().await;
    let event = Uuid::now_v7();
    store.start_attempt(BILLING.key(event)).await.unwrap();
    drop(handled(&store, event).await);

    let mut next = None;
    for _ in 0..50 {
        // A server may take a moment to notice the abandoned transaction.
        let mut tx = store.begin().await.unwrap();
        match store.mark(&mut tx, BILLING.key(event)).await {
            Ok(mark) => {
                store.rollback(tx).await.unwrap();
                next = Some(mark);
                break;
            }
            Err(e) if e.is_transient() => {
                let _ = store.rollback(tx).await;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("mark failed: {e}"),
        }
    }
    assert_eq!(next, Some(InboxMark::Fresh(())));
    let after = store.start_attempt(BILLING.key(event)).await.unwrap();
    assert_eq!(after, counts(2, 0));
    assert_eq!(after.unwrap().unfinished(), 2);
}

/// Retention deletes attempt counts last written before its window, with
/// the marks, per consumer.
pub async fn retention_purges_stale_attempt_counts(h: &impl InboxHarness) {
    let store = h.store().await;
    let (event, other) = (Uuid::now_v7(), Uuid::now_v7());
    store.start_attempt(BILLING.key(event)).await.unwrap();
    store.start_attempt(SHIPPING.key(other)).await.unwrap();
    let hour = Duration::from_secs(3600);
    assert_eq!(store.purge_older_than(&BILLING, hour, 10).await.unwrap(), 0);
    assert_eq!(
        store.start_attempt(BILLING.key(event)).await.unwrap(),
        counts(2, 0)
    );
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert_eq!(
        store
            .purge_older_than(&BILLING, Duration::ZERO, 10)
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        store.start_attempt(BILLING.key(event)).await.unwrap(),
        counts(1, 0),
        "a purged count starts over"
    );
    assert_eq!(
        store.start_attempt(SHIPPING.key(other)).await.unwrap(),
        counts(2, 0),
        "another consumer's count stays"
    );
}
