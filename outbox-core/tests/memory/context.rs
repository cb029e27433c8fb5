//! The in-memory unit of work: all or nothing. Its inbox runs the inbox
//! conformance suite (`inbox`).

use tidings_core::memory::{CommitError, MemoryContext, MemoryStore};
use tidings_core::{OutboxSpec, StageError};
use uuid::Uuid;

static EVENTS: OutboxSpec<u32> = OutboxSpec::json("events").destination("events-q");

/// Writes order `n` as placed and stages its event in `ctx`.
fn place(ctx: &mut MemoryContext, n: u32) {
    ctx.insert("orders", n.to_string(), "placed");
    ctx.outbox().stage(&EVENTS, "order.placed", &n).unwrap();
}

/// No order was written to `store` and no event staged.
fn assert_nothing_committed(store: &MemoryStore) {
    assert!(store.table("orders").is_empty());
    assert_eq!(store.pending_count("events"), 0);
}

#[test]
fn commit_applies_writes_and_events_together() {
    let store = MemoryStore::new();
    let mut ctx = store.begin();
    place(&mut ctx, 1);
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
        place(&mut ctx, 1);
    }
    let mut ctx = store.begin();
    place(&mut ctx, 2);
    ctx.rollback();
    assert_nothing_committed(&store);
}

#[test]
fn an_invalid_staged_event_fails_the_whole_commit() {
    let store = MemoryStore::new();
    let mut ctx = store.begin();
    place(&mut ctx, 1);
    ctx.outbox()
        .stage(&EVENTS, "order.placed", &2)
        .unwrap()
        .header("ce-id", "forged");
    let err = ctx.commit().unwrap_err();
    assert!(
        matches!(err, CommitError::Stage(StageError::ReservedHeader { ref name, .. }) if name == "ce-id"),
        "{err}"
    );
    assert_nothing_committed(&store);
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
