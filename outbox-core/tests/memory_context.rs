//! The in-memory unit of work and inbox: all or nothing.

use tidings_core::memory::{CommitError, MemoryStore};
use tidings_core::{InboxError, InboxMark, InboxStore, OutboxSpec, StageError};
use uuid::Uuid;

static EVENTS: OutboxSpec<u32> = OutboxSpec::json("events").to_queue("events-q");

#[test]
fn commit_applies_writes_and_events_together() {
    let store = MemoryStore::new();
    let mut ctx = store.begin();
    ctx.insert("orders", "1", "placed");
    ctx.outbox().stage(&EVENTS, "order.placed", &1).unwrap();
    assert_eq!(ctx.get("orders", "1").as_deref(), Some(&b"placed"[..]));
    assert_eq!(store.get("orders", "1"), None, "visible before commit");
    ctx.commit().unwrap();
    assert_eq!(store.get("orders", "1").as_deref(), Some(&b"placed"[..]));
    assert_eq!(store.pending_count("events"), 1);
}

#[test]
fn dropped_or_rolled_back_contexts_leave_nothing() {
    let store = MemoryStore::new();
    {
        let mut ctx = store.begin();
        ctx.insert("orders", "1", "placed");
        ctx.outbox().stage(&EVENTS, "order.placed", &1).unwrap();
    }
    let mut ctx = store.begin();
    ctx.insert("orders", "2", "placed");
    ctx.outbox().stage(&EVENTS, "order.placed", &2).unwrap();
    ctx.rollback();
    assert!(store.table("orders").is_empty());
    assert_eq!(store.pending_count("events"), 0);
}

#[test]
fn an_invalid_staged_event_fails_the_whole_commit() {
    let store = MemoryStore::new();
    let mut ctx = store.begin();
    ctx.insert("orders", "1", "placed");
    ctx.outbox().stage(&EVENTS, "order.placed", &1).unwrap();
    ctx.outbox()
        .stage(&EVENTS, "order.placed", &2)
        .unwrap()
        .header("ce-id", "forged");
    let err = ctx.commit().unwrap_err();
    assert!(
        matches!(err, CommitError::Stage(StageError::ReservedHeader { ref name, .. }) if name == "ce-id"),
        "{err}"
    );
    assert!(store.table("orders").is_empty());
    assert_eq!(store.pending_count("events"), 0);
}

#[test]
fn an_event_id_staged_again_is_stored_once() {
    let store = MemoryStore::new();
    let id = Uuid::now_v7();
    let mut first = store.begin();
    first.outbox().stage(&EVENTS, "t", &1).unwrap().event_id(id);
    first.commit().unwrap();
    let mut second = store.begin();
    second.insert("orders", "2", "x");
    second
        .outbox()
        .stage(&EVENTS, "t", &2)
        .unwrap()
        .event_id(id);
    second.outbox().stage(&EVENTS, "t", &3).unwrap();
    second.commit().unwrap();
    assert_eq!(
        store.pending_count("events"),
        2,
        "the repeated id was stored twice"
    );
    assert_eq!(store.event_ids("events")[0], id);
    assert_eq!(
        store.table("orders").len(),
        1,
        "the rest of the unit of work still commits"
    );
}

#[tokio::test]
async fn the_inbox_marks_once_and_reports_duplicates() {
    let store = MemoryStore::new();
    let id = Uuid::now_v7();
    let mut tx = InboxStore::begin(&store).await.unwrap();
    assert_eq!(
        store.mark(&mut tx, "billing", id).await.unwrap(),
        InboxMark::Fresh
    );
    tx.insert("invoices", id.to_string(), "1");
    InboxStore::commit(&store, tx).await.unwrap();

    let mut again = InboxStore::begin(&store).await.unwrap();
    assert_eq!(
        store.mark(&mut again, "billing", id).await.unwrap(),
        InboxMark::Duplicate
    );
    assert_eq!(
        store.mark(&mut again, "shipping", id).await.unwrap(),
        InboxMark::Fresh,
        "marks are per consumer"
    );
    InboxStore::rollback(&store, again).await.unwrap();
    assert_eq!(store.table("invoices").len(), 1);
}

#[tokio::test]
async fn a_rolled_back_handler_leaves_neither_writes_nor_mark() {
    let store = MemoryStore::new();
    let id = Uuid::now_v7();
    let mut tx = InboxStore::begin(&store).await.unwrap();
    store.mark(&mut tx, "billing", id).await.unwrap();
    tx.insert("invoices", id.to_string(), "1");
    InboxStore::rollback(&store, tx).await.unwrap();
    assert!(store.table("invoices").is_empty());
    let mut retry = InboxStore::begin(&store).await.unwrap();
    assert_eq!(
        store.mark(&mut retry, "billing", id).await.unwrap(),
        InboxMark::Fresh
    );
}

#[tokio::test]
async fn concurrent_marks_of_one_event_commit_once() {
    let store = MemoryStore::new();
    let id = Uuid::now_v7();
    let mut a = InboxStore::begin(&store).await.unwrap();
    let mut b = InboxStore::begin(&store).await.unwrap();
    assert_eq!(
        store.mark(&mut a, "billing", id).await.unwrap(),
        InboxMark::Fresh
    );
    assert_eq!(
        store.mark(&mut b, "billing", id).await.unwrap(),
        InboxMark::Fresh
    );
    a.insert("invoices", "a", "1");
    b.insert("invoices", "b", "1");
    InboxStore::commit(&store, a).await.unwrap();
    let err = InboxStore::commit(&store, b).await.unwrap_err();
    assert!(matches!(err, InboxError::Conflict(_)) && err.is_transient());
    assert_eq!(store.table("invoices").len(), 1);
}
