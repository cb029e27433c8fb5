//! The change-stream wake-up: a commit wakes a relay polling every 10 s
//! within 500 ms; a killed stream comes back, and a server without change
//! streams leaves the relay polling, with no error reaching the caller.

use std::time::Duration;

use crate::support::server::PrivateServer;
use crate::support::{ORDER_EVENTS, client_on, drop_collections, store, store_in};
use futures::FutureExt;
use mongodb::Client;
use mongodb::bson::{Document, doc};
use tidings_core::memory::MemoryBroker;
use tidings_core::relay::{Relay, RelayOptions};
use tidings_core::{Backoff, Wakeup};
use tidings_mongo::{MongoOutboxStore, Retention};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const QUEUE: &str = "orders";
const WAKE_LATENCY: Duration = Duration::from_millis(500);

/// A relay polling every `poll` and woken by the store's watcher, both
/// running until `cancel`; returns the broker it publishes to and both
/// tasks.
fn relay_and_watcher(
    store: &MongoOutboxStore,
    poll: Duration,
    cancel: &CancellationToken,
) -> (
    MemoryBroker,
    JoinHandle<()>,
    JoinHandle<Result<(), tidings_core::StoreError>>,
) {
    let broker = MemoryBroker::new();
    broker.declare_queue(QUEUE);
    let wakeup = Wakeup::new();
    let watcher = store
        .wakeup_source(wakeup.clone())
        .reconnect_backoff(Backoff::new(
            Duration::from_millis(50),
            Duration::from_secs(5),
        ))
        .spawn(cancel.clone());
    let relay = Relay::new(store.clone(), broker.clone(), &ORDER_EVENTS)
        .unwrap()
        .options(RelayOptions::default().poll_interval(poll))
        .wakeup(wakeup);
    let relay = tokio::spawn({
        let cancel = cancel.clone();
        async move { relay.run(cancel).await }
    });
    (broker, watcher, relay)
}

/// Stages one event and returns how long it took to reach the broker, or
/// `None` after `timeout`.
async fn relayed_after(
    store: &MongoOutboxStore,
    broker: &MemoryBroker,
    timeout: Duration,
) -> Option<Duration> {
    let before = broker.depth(QUEUE);
    // Through the transaction helper: a broken connection clears the
    // driver's pool, and the helper runs the staging again.
    store
        .transaction(|ctx| {
            let staged = ctx
                .outbox()
                .stage(&ORDER_EVENTS, "order.placed", &1)
                .map(drop);
            async move { Ok(staged?) }.boxed()
        })
        .await
        .expect("staged");
    let committed = Instant::now();
    while broker.depth(QUEUE) == before {
        if committed.elapsed() > timeout {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Some(committed.elapsed())
}

/// Waits until the watcher is up: a staged event is relayed within the
/// wake latency.
async fn until_watching(store: &MongoOutboxStore, broker: &MemoryBroker) {
    let started = Instant::now();
    loop {
        if relayed_after(store, broker, Duration::from_secs(2))
            .await
            .is_some_and(|latency| latency < WAKE_LATENCY)
        {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the watcher never woke the relay"
        );
    }
}

async fn fail_point(client: &Client, command: Document) {
    let mut configure = doc! { "configureFailPoint": "failCommand" };
    configure.extend(command);
    client
        .database("admin")
        .run_command(configure)
        .await
        .expect("configure fail point");
}

/// Stops both tasks and checks that neither failed.
async fn stop(
    cancel: CancellationToken,
    watcher: JoinHandle<()>,
    relay: JoinHandle<Result<(), tidings_core::StoreError>>,
) {
    cancel.cancel();
    watcher.await.expect("the watcher ended cleanly");
    relay.await.unwrap().expect("no error reached the relay");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_staged_event_wakes_the_relay_within_500_ms_despite_a_10_s_poll() {
    let store = store(Retention::Delete).await;
    let cancel = CancellationToken::new();
    let (broker, watcher, relay) = relay_and_watcher(&store, Duration::from_secs(10), &cancel);
    until_watching(&store, &broker).await;

    for _ in 0..3 {
        let latency = relayed_after(&store, &broker, Duration::from_secs(10))
            .await
            .expect("relayed before the poll interval");
        tracing::info!(?latency, "relayed after commit");
        assert!(latency < WAKE_LATENCY, "relayed {latency:?} after commit");
    }
    stop(cancel, watcher, relay).await;
    drop_collections(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_stream_is_opened_again_and_keeps_waking_the_relay() {
    let server = PrivateServer::start(&["--enable-test-commands"]);
    let client = client_on(&server.url()).await;
    let store = store_in(client.database("wakeup"), Retention::Delete).await;
    let cancel = CancellationToken::new();
    let (broker, watcher, relay) = relay_and_watcher(&store, Duration::from_secs(10), &cancel);
    until_watching(&store, &broker).await;

    // The server drops the stream's connection on its next reads (the
    // driver resumes by itself), then refuses one read with an error the
    // driver does not resume from (the watcher opens the stream again after
    // the last event it saw).
    let kills = [
        doc! { "mode": { "times": 3 }, "data": { "failCommands": ["getMore"], "closeConnection": true } },
        doc! { "mode": { "times": 1 }, "data": { "failCommands": ["getMore"], "errorCode": 2 } },
    ];
    for kill in kills {
        fail_point(&client, kill).await;
        let relayed = relayed_after(&store, &broker, Duration::from_secs(15)).await;
        assert!(
            relayed.is_some(),
            "the event staged while the stream broke was relayed"
        );
        until_watching(&store, &broker).await;
    }

    until_watching(&store, &broker).await;
    let latency = relayed_after(&store, &broker, Duration::from_secs(10))
        .await
        .expect("relayed before the poll interval");
    assert!(latency < WAKE_LATENCY, "relayed {latency:?} after commit");
    stop(cancel, watcher, relay).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_change_streams_the_relay_polls_and_no_error_surfaces() {
    let server = PrivateServer::start(&["--enable-test-commands"]);
    let client = client_on(&server.url()).await;
    let store = store_in(client.database("wakeup"), Retention::Delete).await;
    // What a standalone server answers to $changeStream.
    fail_point(
        &client,
        doc! { "mode": "alwaysOn", "data": { "failCommands": ["aggregate"], "errorCode": 40573 } },
    )
    .await;
    let cancel = CancellationToken::new();
    let (broker, watcher, relay) = relay_and_watcher(&store, Duration::from_millis(300), &cancel);

    for _ in 0..3 {
        let latency = relayed_after(&store, &broker, Duration::from_secs(10))
            .await
            .expect("the polling floor relays");
        assert!(
            latency < Duration::from_secs(5),
            "relayed {latency:?} after commit"
        );
    }
    assert!(!watcher.is_finished(), "the watcher waits to try again");
    stop(cancel, watcher, relay).await;
}
