//! Dead letters on RabbitMQ through `tidings dead-letters`: a poison
//! message parked by the consumer is listed and shown without being
//! consumed, replayed once its handler is fixed, and handled exactly once;
//! a copy of an event already handled is replayed too and deduped by the
//! inbox. Replaying into a queue that is gone fails and keeps the dead
//! letter; a replay whose connection the broker drops halfway loses
//! nothing and completes when run again.

mod support;

use std::time::Duration;

use predicates::str::contains;
use support::consumer::{consume, create_effects, effects, envelope};
use support::{drop_schema, json, pg_store, stdout, tidings};
use tidings_admin::tidings_rabbitmq::lapin::options::{BasicGetOptions, QueueDeleteOptions};
use tidings_admin::tidings_rabbitmq::lapin::types::{AMQPValue, FieldTable, LongString};
use tidings_admin::tidings_rabbitmq::lapin::{BasicProperties, Connection, ConnectionProperties};
use tidings_admin::tidings_rabbitmq::{
    ConnectionOptions, PublisherOptions, QueueOptions, RabbitPublisher, RabbitSource,
    SourceOptions, Topology, dead_letter_queue,
};
use tidings_core::{Backoff, Envelope, Publisher};
use tidings_testing::names::unique_name;
use tidings_testing::services::{amqp_url, service_missing};

/// Declares a queue of the test's own with its dead-letter queue.
async fn declare(prefix: &str) -> &'static str {
    let name: &'static str = Box::leak(unique_name(prefix).into_boxed_str());
    let options = QueueOptions::classic().expires(Duration::from_secs(120));
    Topology::new(ConnectionOptions::new(amqp_url()))
        .declare_queue(name, options)
        .await
        .unwrap_or_else(|e| service_missing("RabbitMQ", &amqp_url(), &e));
    name
}

fn rabbit_source() -> RabbitSource {
    let backoff = Backoff::new(Duration::from_millis(20), Duration::from_millis(200));
    RabbitSource::new(
        ConnectionOptions::new(amqp_url()).reconnect(backoff),
        SourceOptions::default(),
    )
}

/// Puts a copy of `envelope` straight into `queue`'s dead-letter queue, as
/// the acker would with `reason`.
async fn park(queue: &str, envelope: &Envelope, reason: &str) {
    let mut headers = FieldTable::default();
    for (name, value) in tidings_core::cloudevents::to_attributes(envelope) {
        headers.insert(name.into(), AMQPValue::LongString(LongString::from(value)));
    }
    headers.insert(
        "x-dead-letter-reason".into(),
        AMQPValue::LongString(LongString::from(reason)),
    );
    let properties = BasicProperties::default()
        .with_message_id(envelope.event_id.to_string().into())
        .with_type(envelope.event_type.as_str().into())
        .with_headers(headers);
    let connection = Connection::connect(&amqp_url(), ConnectionProperties::default())
        .await
        .unwrap();
    let channel = connection.create_channel().await.unwrap();
    let dlq = dead_letter_queue(queue);
    channel
        .basic_publish(
            "".into(),
            dlq.as_str().into(),
            Default::default(),
            &envelope.payload,
            properties,
        )
        .await
        .unwrap()
        .await
        .unwrap();
    let _ = connection.close(200, "OK".into()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_message_is_listed_shown_replayed_and_handled_once() {
    let store = pg_store().await;
    create_effects(&store).await;
    let queue = declare("tidings_cli_orders").await;
    let publisher = RabbitPublisher::new(
        ConnectionOptions::new(amqp_url()),
        PublisherOptions::default(),
    );
    let poison = envelope(queue, 7);
    let fine = envelope(queue, 8);
    publisher.publish(&poison).await.unwrap();
    publisher.publish(&fine).await.unwrap();

    let seen = consume(&store, queue, rabbit_source(), true, |seen, _| {
        seen.len() >= 2
    })
    .await;
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(effects(&store).await, (1, 1));

    let list = ["dead-letters", "list", "--queue", queue];
    let listed = json(tidings().args(list));
    assert_eq!(listed["depth"], 1, "{listed}");
    assert_eq!(listed["messages"][0]["id"], poison.event_id.to_string());
    assert!(
        listed["messages"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("negative total")
    );
    let id = poison.event_id.to_string();
    let shown = stdout(tidings().args(["dead-letters", "show", "--queue", queue, &id]));
    assert!(
        shown.contains("negative total") && shown.contains("{\"id\":7}"),
        "{shown}"
    );
    let table = stdout(tidings().args(list));
    assert!(
        table.contains("1 of 1 messages") && table.contains(&id),
        "{table}"
    );

    // A copy of an event already handled, as a replay that died between
    // copying and removing would leave behind.
    park(queue, &fine, "a stale copy").await;
    let replay = ["dead-letters", "replay", "--queue", queue, "--rate", "20"];
    let dry = stdout(tidings().args(replay).arg("--dry-run"));
    assert!(dry.contains("would have replayed 2 messages"), "{dry}");
    assert_eq!(json(tidings().args(list))["depth"], 2, "a dry run consumed");
    let done = json(tidings().args(replay));
    assert_eq!(
        (&done["matched"], &done["done"]),
        (&2.into(), &2.into()),
        "{done}"
    );
    assert_eq!(json(tidings().args(list))["depth"], 0);

    let seen = consume(&store, queue, rabbit_source(), false, |seen, duplicates| {
        seen.iter().any(|s| s.0 == 7) && duplicates >= 1
    })
    .await;
    assert_eq!(
        effects(&store).await,
        (2, 1),
        "order 8 handled twice or 7 not at all"
    );
    let replayed: Vec<_> = seen.iter().filter(|s| s.0 == 7).collect();
    assert_eq!(replayed.len(), 1, "{seen:?}");
    assert!(
        replayed[0]
            .1
            .as_deref()
            .unwrap_or_default()
            .contains("negative total"),
        "{seen:?}"
    );
    assert_eq!(replayed[0].2, Some(1), "the delivery count was not reset");
    Topology::new(ConnectionOptions::new(amqp_url()))
        .delete_queue(queue)
        .await
        .unwrap();
    drop_schema(&store).await;
}

#[tokio::test]
async fn a_replay_into_a_queue_that_is_gone_fails_and_keeps_the_dead_letter() {
    let queue = declare("tidings_cli_gone").await;
    let letter = envelope(queue, 1);
    park(queue, &letter, "poison").await;
    let connection = Connection::connect(&amqp_url(), ConnectionProperties::default())
        .await
        .unwrap();
    let channel = connection.create_channel().await.unwrap();
    channel
        .queue_delete(queue.into(), QueueDeleteOptions::default())
        .await
        .unwrap();
    let _ = connection.close(200, "OK".into()).await;

    tidings()
        .args(["dead-letters", "replay", "--queue", queue])
        .assert()
        .code(1)
        .stderr(contains(format!("queue \"{queue}\" does not exist")));
    assert_eq!(
        json(tidings().args(["dead-letters", "list", "--queue", queue]))["depth"],
        1
    );
    tidings()
        .args(["dead-letters", "show", "--queue", queue, "no-such-id"])
        .assert()
        .code(1)
        .stderr(contains("no dead letter \"no-such-id\""));
    tidings()
        .args([
            "dead-letters",
            "list",
            "--queue",
            "tidings_cli_never_declared",
        ])
        .assert()
        .code(1)
        .stderr(contains(
            "\"tidings_cli_never_declared.dlq\" does not exist",
        ));
    tidings()
        .args(["dead-letters", "purge", "--queue", queue])
        .assert()
        .code(2)
        .stderr(contains("--all"));
    let purged = stdout(tidings().args([
        "dead-letters",
        "purge",
        "--queue",
        queue,
        "--reason",
        "poison",
        "--yes",
    ]));
    assert!(purged.contains("deleted 1 of 1"), "{purged}");
    Topology::new(ConnectionOptions::new(amqp_url()))
        .delete_queue(queue)
        .await
        .unwrap();
}

/// The message ids in `queue`, taken out of it.
async fn drain(queue: &str) -> Vec<String> {
    let connection = Connection::connect(&amqp_url(), ConnectionProperties::default())
        .await
        .unwrap();
    let channel = connection.create_channel().await.unwrap();
    let mut ids = Vec::new();
    while let Some(got) = channel
        .basic_get(queue.into(), BasicGetOptions { no_ack: true })
        .await
        .unwrap()
    {
        let id = got.delivery.properties.message_id().as_ref().unwrap();
        ids.push(id.to_string());
    }
    let _ = connection.close(200, "OK".into()).await;
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_the_broker_drops_halfway_loses_nothing_and_runs_again() {
    // At 5 a second the replay takes 20 s, long enough to find and close
    // its connection on a busy machine, where each `rabbitmqctl` takes
    // seconds.
    const PARKED: u64 = 100;
    let queue = declare("tidings_cli_dropped").await;
    let mut parked = Vec::new();
    for id in 0..PARKED as i32 {
        let letter = envelope(queue, id);
        park(queue, &letter, "poison").await;
        parked.push(letter.event_id.to_string());
    }
    let name = unique_name("tidings-cli-replay");
    let replay = std::process::Command::new(assert_cmd::cargo::cargo_bin("tidings"))
        .args(["--amqp-url", &amqp_url(), "--amqp-connection-name", &name])
        .args(["dead-letters", "replay", "--queue", queue, "--rate", "5"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1200)).await;
    tidings_testing::faults::close_rabbitmq_connection(&name).await;
    let output = replay.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("run the command again"), "{stderr}");

    let left = json(tidings().args(["dead-letters", "list", "--queue", queue]))["depth"]
        .as_u64()
        .unwrap();
    assert!((1..PARKED).contains(&left), "{left} dead letters left");
    stdout(tidings().args(["dead-letters", "replay", "--queue", queue]));
    assert_eq!(
        json(tidings().args(["dead-letters", "list", "--queue", queue]))["depth"],
        0
    );
    let mut replayed = drain(queue).await;
    assert!(
        replayed.len() as u64 <= PARKED + 1,
        "more than one copy too many: {}",
        replayed.len()
    );
    replayed.sort();
    replayed.dedup();
    parked.sort();
    assert_eq!(replayed, parked, "a dead letter was lost");
    Topology::new(ConnectionOptions::new(amqp_url()))
        .delete_queue(queue)
        .await
        .unwrap();
}
