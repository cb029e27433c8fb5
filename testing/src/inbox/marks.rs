//! Marks: each event's effect committed once per consumer.
//!
//! The contract for concurrent marks of one event, which every store
//! keeps in its own way: of the transactions marking it at once, **one
//! commits**; each other learns [`InboxMark::Duplicate`] (PostgreSQL makes
//! it wait for the first to end) or fails with a transient
//! [`InboxError::Conflict`], at the mark (MongoDB) or at the commit (the
//! in-memory store). A retry after the winner committed sees a duplicate;
//! after the winner rolled back, a retry commits.

use std::time::Duration;

use tidings_core::{ConsumerName, InboxError, InboxMark, InboxPurge, InboxStore};
use tidings_inbox::{Inbox, InboxCleaner};
use uuid::Uuid;

use super::{BILLING, InboxHarness, SHIPPING};

/// How one handler's transaction over an event ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Committed,
    Duplicate,
    Conflict,
}

/// A transient error is a conflict; any other fails the case.
fn settle<T>(result: Result<T, InboxError>) -> Result<T, Outcome> {
    result.map_err(|e| {
        assert!(
            e.is_transient(),
            "only a transient conflict may end a mark: {e}"
        );
        Outcome::Conflict
    })
}

/// A handler run: mark, stage its reaction, commit.
/// A transaction holding a fresh billing mark of `event` and the
/// handler's write, not yet committed.
async fn fresh<H: InboxHarness>(store: &H::Store, event: Uuid) -> <H::Store as InboxStore>::Tx {
    let mut tx = store.begin().await.unwrap();
    assert_eq!(
        store.mark(&mut tx, BILLING.key(event)).await.unwrap(),
        InboxMark::Fresh(())
    );
    H::stage(&mut tx);
    tx
}

async fn handle<H: InboxHarness>(store: &H::Store, event: Uuid) -> Outcome {
    let mut tx = store.begin().await.expect("begin");
    let run = async {
        match settle(store.mark(&mut tx, BILLING.key(event)).await)? {
            InboxMark::Duplicate => Err(Outcome::Duplicate),
            InboxMark::Fresh(()) => {
                H::stage(&mut tx);
                Ok(())
            }
        }
    };
    match run.await {
        Ok(()) => match settle(store.commit(tx).await) {
            Ok(()) => Outcome::Committed,
            Err(outcome) => outcome,
        },
        Err(outcome) => {
            store.rollback(tx).await.expect("rollback");
            outcome
        }
    }
}

/// A mark is fresh once and a duplicate after its commit; a duplicate
/// leaves the transaction usable, and other consumers mark on their own.
pub async fn a_duplicate_is_reported_and_leaves_the_transaction_usable<H: InboxHarness>(h: &H) {
    let store = h.store().await;
    let event = Uuid::now_v7();
    assert_eq!(handle::<H>(&store, event).await, Outcome::Committed);

    let mut tx = store.begin().await.unwrap();
    assert_eq!(
        store.mark(&mut tx, BILLING.key(event)).await.unwrap(),
        InboxMark::Duplicate
    );
    assert_eq!(
        store.mark(&mut tx, SHIPPING.key(event)).await.unwrap(),
        InboxMark::Fresh(())
    );
    H::stage(&mut tx);
    store.commit(tx).await.unwrap();
    assert_eq!(h.staged(&store).await, 2, "both reactions committed");
    assert_eq!(marks(&store, &BILLING).await, 1);
    assert_eq!(marks(&store, &SHIPPING).await, 1);
}

/// A rollback takes the mark and the handler's writes with it; the
/// redelivery is fresh.
pub async fn a_rollback_takes_the_mark_with_it<H: InboxHarness>(h: &H) {
    let store = h.store().await;
    let event = Uuid::now_v7();
    let tx = fresh::<H>(&store, event).await;
    store.rollback(tx).await.unwrap();
    assert_eq!(h.staged(&store).await, 0);

    assert_eq!(handle::<H>(&store, event).await, Outcome::Committed);
    assert_eq!(h.staged(&store).await, 1);
}

/// Two handlers of one event at once: one commits, the other sees a
/// duplicate or a conflict, and a retry sees a duplicate.
pub async fn concurrent_marks_of_one_event_commit_once<H: InboxHarness>(h: &H) {
    let store = h.store().await;
    let event = Uuid::now_v7();
    let first = fresh::<H>(&store, event).await;
    let second = tokio::spawn({
        let store = store.clone();
        async move { handle::<H>(&store, event).await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let first = match settle(store.commit(first).await) {
        Ok(()) => Outcome::Committed,
        Err(outcome) => outcome,
    };
    let second = second.await.unwrap();
    let committed = [first, second]
        .iter()
        .filter(|o| **o == Outcome::Committed)
        .count();
    assert_eq!(
        committed, 1,
        "one of the two commits: {first:?}, {second:?}"
    );
    assert_eq!(handle::<H>(&store, event).await, Outcome::Duplicate);
    assert_eq!(h.staged(&store).await, 1);
    assert_eq!(marks(&store, &BILLING).await, 1);
}

/// When the first handler rolls back, the other (or its retry) commits.
pub async fn a_concurrent_mark_commits_when_the_first_rolls_back<H: InboxHarness>(h: &H) {
    let store = h.store().await;
    let event = Uuid::now_v7();
    let mut first = store.begin().await.unwrap();
    store.mark(&mut first, BILLING.key(event)).await.unwrap();
    let second = tokio::spawn({
        let store = store.clone();
        async move { handle::<H>(&store, event).await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    store.rollback(first).await.unwrap();
    let mut outcome = second.await.unwrap();
    for _ in 0..3 {
        if outcome != Outcome::Conflict {
            break;
        }
        outcome = handle::<H>(&store, event).await;
    }
    assert_eq!(outcome, Outcome::Committed);
    assert_eq!(h.staged(&store).await, 1);
}

/// Marks older than the window go, per consumer, at most `limit` a call.
pub async fn old_marks_are_purged_per_consumer_in_batches<H: InboxHarness>(h: &H) {
    let store = h.store().await;
    let mut tx = store.begin().await.unwrap();
    for _ in 0..3 {
        store
            .mark(&mut tx, BILLING.key(Uuid::now_v7()))
            .await
            .unwrap();
    }
    store
        .mark(&mut tx, SHIPPING.key(Uuid::now_v7()))
        .await
        .unwrap();
    store.commit(tx).await.unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;

    let hour = Duration::from_secs(3600);
    assert_eq!(store.purge_older_than(&BILLING, hour, 10).await.unwrap(), 0);
    let purge = || store.purge_older_than(&BILLING, Duration::ZERO, 2);
    assert_eq!(purge().await.unwrap(), 2);
    assert_eq!(purge().await.unwrap(), 1);
    assert_eq!(purge().await.unwrap(), 0);
    assert_eq!(
        marks(&store, &SHIPPING).await,
        1,
        "other consumers keep theirs"
    );
}

/// Consumer names that are not legal names never reach the store: no
/// inbox and no cleaner can be made for one, and the store's own methods
/// take only a checked [`ConsumerName`].
pub async fn hostile_consumer_names_are_refused<H: InboxHarness>(h: &H) {
    let store = h.store().await;
    for bad in ["billing'; --", "$where", "", "a b", "billing\0"] {
        let refusals = [
            Inbox::new(store.clone(), bad).err(),
            InboxCleaner::new(store.clone(), bad).err(),
            ConsumerName::new(bad).err(),
        ];
        for refusal in refusals {
            let err = refusal.unwrap_or_else(|| panic!("{bad:?} was taken"));
            assert!(
                err.to_string().starts_with("consumer name"),
                "{bad:?}: {err}"
            );
        }
    }
}

/// The consumer's committed marks, counted by purging them all.
async fn marks(store: &impl InboxPurge, consumer: &ConsumerName) -> u64 {
    tokio::time::sleep(Duration::from_millis(20)).await;
    store
        .purge_older_than(consumer, Duration::ZERO, 10_000)
        .await
        .unwrap()
}
