//! Wake-up hints go only where somebody hears them: none while no listener
//! exists, none for the store's own listeners (woken in process), and again
//! within about a second of a listener starting elsewhere, and none at all
//! where the store is told its process relays everything it stages. A
//! stopped listener gives back the lock that marks it.
//!
//! Each test overhears its store's channel with a plain `LISTEN`, which
//! holds no presence lock and so does not count as a listener itself.

use crate::support;

use std::time::Duration;

use sqlx::postgres::PgListener as Eavesdropper;
use support::{Listening, ORDER_EVENTS, drop_schema, listening_backends, store};
use tidings_core::Wakeup;
use tidings_postgres::{PgOutboxStore, PgWakeupSource, Retention};

/// Longer than a store trusts its last look at who listens.
const LOOK_AGAIN: Duration = Duration::from_millis(1_300);
/// How long to wait for hints that should not come.
const QUIET: Duration = Duration::from_millis(300);

async fn eavesdropper(store: &PgOutboxStore) -> Eavesdropper {
    let mut spy = Eavesdropper::connect_with(store.pool()).await.unwrap();
    spy.listen(store.channel()).await.unwrap();
    spy
}

/// The notifications the spy hears until it has heard nothing for `wait`.
async fn overheard(spy: &mut Eavesdropper, wait: Duration) -> usize {
    let mut heard = 0;
    while let Ok(received) = tokio::time::timeout(wait, spy.recv()).await {
        received.unwrap();
        heard += 1;
    }
    heard
}

async fn commit_one(store: &PgOutboxStore, n: u64) {
    let mut ctx = store.begin().await.unwrap();
    ctx.outbox()
        .stage(&ORDER_EVENTS, "order.placed", &n)
        .unwrap();
    ctx.commit().await.unwrap();
}

/// Stages through a transaction the caller owns, which announces its
/// commit by a `NOTIFY` inside it where anyone listens.
async fn commit_in_callers_transaction(store: &PgOutboxStore, n: u64) {
    let mut conn = store.pool().acquire().await.unwrap();
    let mut ctx = store.begin_on(&mut conn).await.unwrap();
    ctx.outbox()
        .stage(&ORDER_EVENTS, "order.placed", &n)
        .unwrap();
    ctx.commit().await.unwrap();
}

/// A listener the store did not make, as one in another process is.
fn listener_elsewhere(store: &PgOutboxStore) -> PgWakeupSource {
    PgWakeupSource::new(store.pool().clone(), store.channel(), Wakeup::new())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_hint_is_sent_while_nobody_listens() {
    let store = store(Retention::Delete).await;
    let mut spy = eavesdropper(&store).await;
    for n in 0..5 {
        commit_one(&store, n).await;
    }
    assert_eq!(overheard(&mut spy, QUIET).await, 0);
    drop(spy);
    drop_schema(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_notifies_only_while_somebody_may_listen() {
    let store = store(Retention::Delete).await;
    let mut spy = eavesdropper(&store).await;
    // Before the store has looked, it assumes a listener and notifies.
    commit_in_callers_transaction(&store, 0).await;
    assert!(overheard(&mut spy, QUIET).await >= 1);
    // Having looked, it knows nobody does.
    for n in 1..4 {
        commit_in_callers_transaction(&store, n).await;
    }
    assert_eq!(overheard(&mut spy, QUIET).await, 0);
    drop(spy);
    drop_schema(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stores_own_listener_is_woken_without_a_hint() {
    let store = store(Retention::Delete).await;
    let (listener, wakeup) = Listening::own(&store).await;
    let mut spy = eavesdropper(&store).await;
    for n in 0..3 {
        commit_one(&store, n).await;
        tokio::time::timeout(Duration::from_secs(1), wakeup.notified())
            .await
            .expect("woken in process");
    }
    assert_eq!(overheard(&mut spy, QUIET).await, 0);
    listener.stop().await;
    drop(spy);
    drop_schema(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hints_resume_within_a_second_of_a_listener_starting_elsewhere() {
    let store = store(Retention::Delete).await;
    let mut spy = eavesdropper(&store).await;
    commit_one(&store, 0).await;
    assert_eq!(overheard(&mut spy, QUIET).await, 0);

    let listener = Listening::start(&store, listener_elsewhere(&store)).await;
    tokio::time::sleep(LOOK_AGAIN).await;
    commit_one(&store, 1).await;
    assert!(
        overheard(&mut spy, QUIET).await >= 1,
        "no hint reached the new listener"
    );
    listener.stop().await;
    drop(spy);
    drop_schema(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_hints_off_leaves_listeners_elsewhere_to_poll() {
    let store = store(Retention::Delete).await;
    let options = store.options().clone().remote_hints(false);
    let quiet = PgOutboxStore::new(store.pool().clone(), options).unwrap();
    let listener = Listening::start(&store, listener_elsewhere(&store)).await;
    let mut spy = eavesdropper(&store).await;

    for n in 0..3 {
        commit_one(&quiet, n).await;
    }
    assert_eq!(overheard(&mut spy, QUIET).await, 0);
    // The same commit through a store with the default hints the listener.
    commit_one(&store, 3).await;
    assert!(overheard(&mut spy, QUIET).await >= 1);
    listener.stop().await;
    drop(spy);
    drop_schema(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_listener_gives_its_presence_lock_back() {
    let store = store(Retention::Delete).await;
    let listener = Listening::start(&store, listener_elsewhere(&store)).await;
    let backend = listener.backend;
    listener.stop().await;
    assert_eq!(
        listening_backends(&store).await,
        Vec::<i32>::new(),
        "backend {backend} went back to the pool still marked as listening"
    );
    drop_schema(&store).await;
}
