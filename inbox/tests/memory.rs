//! The inbox protocol and its retention on the in-memory store.

use std::sync::Arc;
use std::time::Duration;

use tidings_core::memory::{MemoryStore, MemoryStoreOptions};
use tidings_core::{ConsumerName, InboxMark, InboxStore, ManualClock};
use tidings_inbox::{Inbox, InboxCleaner, InboxCleanerOptions};
use uuid::Uuid;

fn store() -> (ManualClock, MemoryStore) {
    let clock = ManualClock::starting_now();
    (
        clock.clone(),
        MemoryStore::with_options(MemoryStoreOptions::new().clock(Arc::new(clock))),
    )
}

async fn handle(inbox: &Inbox<MemoryStore>, id: Uuid) -> bool {
    match inbox.begin(id).await.unwrap() {
        InboxMark::Fresh(mut tx) => {
            tx.insert("effects", id.to_string(), "done");
            inbox.commit(tx).await.unwrap();
            true
        }
        InboxMark::Duplicate => false,
    }
}

#[tokio::test]
async fn the_cleaner_removes_marks_older_than_the_window_in_batches() {
    let (clock, store) = store();
    let inbox = Inbox::new(store.clone(), "billing").unwrap();
    let old: Vec<Uuid> = (0..5).map(|_| Uuid::now_v7()).collect();
    for id in &old {
        assert!(handle(&inbox, *id).await);
    }
    clock.advance(Duration::from_secs(3600));
    let recent = Uuid::now_v7();
    assert!(handle(&inbox, recent).await);

    let options = InboxCleanerOptions::new()
        .keep(Duration::from_secs(1800))
        .batch(2);
    let cleaner = InboxCleaner::new(store.clone(), "billing")
        .unwrap()
        .options(options);
    assert_eq!(cleaner.clean().await.unwrap(), 5);
    assert_eq!(cleaner.clean().await.unwrap(), 0);
    assert!(
        handle(&inbox, old[0]).await,
        "a purged mark no longer dedupes"
    );
    assert!(!handle(&inbox, recent).await, "a recent mark still dedupes");
}

#[tokio::test]
async fn the_cleaner_removes_old_marks_of_the_give_up_hook_too() {
    let (clock, store) = store();
    let given_up = ConsumerName::new("billing").unwrap().given_up();
    let mark = |id: Uuid| {
        let (store, given_up) = (store.clone(), given_up.clone());
        async move {
            let mut tx = InboxStore::begin(&store).await.unwrap();
            let marked = store.mark(&mut tx, given_up.key(id)).await.unwrap();
            InboxStore::commit(&store, tx).await.unwrap();
            marked
        }
    };
    let (old, recent) = (Uuid::now_v7(), Uuid::now_v7());
    assert_eq!(mark(old).await, InboxMark::Fresh(()));
    clock.advance(Duration::from_secs(3600));
    assert_eq!(mark(recent).await, InboxMark::Fresh(()));

    let options = InboxCleanerOptions::new().keep(Duration::from_secs(1800));
    let cleaner = InboxCleaner::new(store.clone(), "billing")
        .unwrap()
        .options(options);
    assert_eq!(cleaner.clean().await.unwrap(), 1);
    assert_eq!(mark(old).await, InboxMark::Fresh(()), "the old one purged");
    assert_eq!(
        mark(recent).await,
        InboxMark::Duplicate,
        "the recent one kept"
    );
}

#[test]
fn consumer_names_are_validated() {
    let err = Inbox::new(MemoryStore::new(), "billing; drop table").unwrap_err();
    assert!(err.to_string().contains("illegal character"), "{err}");
}
